import CDNSSD
import Foundation
import Logging

/// Keeps one service registered through `DNSServiceRegister`: reports the name the daemon chose
/// (a collision when it is not the one asked for), re-registers with backoff when the daemon is
/// unreachable, updates TXT in place, and deallocates the ref (withdrawing the service) on cancel.
///
/// All state lives on the run loop's thread.
final class DNSSDAdvertiser: @unchecked Sendable {
    private let loop: DNSSDRunLoop
    private var registration: ServiceRegistration
    private let continuation: AsyncStream<AdvertiseEvent>.Continuation
    private let logger: Logger
    /// The name registered last, or asked for; re-registrations ask for it again.
    private var currentName: String
    /// Whether `.registered` was reported for the current ref.
    private var announced = false
    private var box: DNSSDCallbackBox?
    private var outageReported = false
    /// Retries since the last success; sets the delay (see `DNSSDRetry`).
    private var retryAttempts = 0
    private var retryTimer: DNSSDRunLoop.TimerID?
    /// While the daemon is away: the next look for a sign of its return, and what the last look saw.
    private var signTimer: DNSSDRunLoop.TimerID?
    /// Fires when a registration is not confirmed in time (see ``confirmTimeout``).
    private var confirmTimer: DNSSDRunLoop.TimerID?
    /// How long a registration may go unconfirmed before it is made again.
    ///
    /// Avahi's compatibility layer was seen (in the lab, after an interface went down and up) to
    /// leave a registration unanswered for good; probing takes under a second, so 3 s means it
    /// is stuck.
    static let confirmTimeout: Duration = .seconds(3)
    private var daemonSeenAccepting: Bool?
    private var cancelled = false
    private var ownInstance: ServiceInstance?
    /// Local-collision renames since the last successful registration (bounded).
    private var consecutiveRenames = 0
    private static let maxRenames = 50

    init(registration: ServiceRegistration, loop: DNSSDRunLoop, continuation: AsyncStream<AdvertiseEvent>.Continuation, logger: Logger) {
        self.registration = registration
        self.currentName = registration.name
        self.loop = loop
        self.continuation = continuation
        self.logger = logger
    }

    /// Starts registering (asynchronously, on the loop).
    func start() {
        loop.perform { self.register() }
    }

    /// Replaces the TXT record; in place when registered, else used at the next registration.
    func updateTXT(_ txt: TXTRecord) {
        loop.perform { self.applyTXT(txt) }
    }

    /// Withdraws the service and ends the event stream, without waiting: `completion` runs once the ref is
    /// deallocated (goodbye packets on their way).
    ///
    /// Use ``withdraw()`` to wait for that.
    func cancel(completion: (@Sendable () -> Void)? = nil) {
        loop.perform {
            self.cancelled = true
            self.loop.cancelTimer(self.retryTimer)
            self.retryTimer = nil
            self.loop.cancelTimer(self.signTimer)
            self.signTimer = nil
            self.loop.cancelTimer(self.confirmTimer)
            self.confirmTimer = nil
            self.loop.close(self.box)
            self.box = nil
            self.forgetOwnInstance()
            self.continuation.finish()
            self.logger.debug("advertisement cancelled", metadata: ["name": "\(self.currentName)"])
        }
        loop.stop(completion: completion)
    }

    /// Withdraws the service and returns once the ref is deallocated, so goodbye packets are on their way;
    /// waits at most ``withdrawLimit`` and blocks no thread.
    func withdraw() async {
        let (done, signal) = AsyncStream.makeStream(of: Void.self)
        cancel { signal.finish() }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { for await _ in done {} }
            group.addTask { try? await Task.sleep(for: DNSSDAdvertiser.withdrawLimit) }
            await group.next()
            group.cancelAll()
        }
    }

    /// How long ``withdraw()`` waits for the run loop to deallocate the ref.
    static let withdrawLimit: Duration = .seconds(2)

    // MARK: - Loop thread

    private func register() {
        guard !cancelled else { return }
        retryTimer = nil
        let box = DNSSDCallbackBox()
        box.register = { [unowned box] flags, error, name in
            self.registerReply(box: box, flags: flags, error: error, name: name)
        }
        box.failed = { error in
            self.lost(error)
        }
        let txt = registration.txt.wireFormat
        guard txt.count <= Int(UInt16.max) else {
            continuation.yield(.failure(.invalidTXT("the TXT record is \(txt.count) bytes; dns_sd takes at most 65535")))
            return
        }
        let name = currentName
        let type = registration.type.rawValue
        let domain = registration.domain
        let port = registration.port.bigEndian  // dns_sd wants network byte order
        let interface = (try? NetworkInterfaceName.index(of: registration.interface)).flatMap { $0 } ?? DNSSDConstants.interfaceAny
        let error = loop.open(box) { context, ref in
            txt.withUnsafeBytes { bytes in
                DNSServiceRegister(ref, 0, interface, name, type, domain, nil, port,
                                   UInt16(bytes.count), bytes.baseAddress, DNSSDCallbacks.register, context)
            }
        }
        if error == DNSSDErrorCode.noError {
            self.box = box
            announced = false
            logger.debug("registering", metadata: ["name": "\(name)", "type": "\(type)", "port": "\(registration.port)"])
            loop.cancelTimer(confirmTimer)
            confirmTimer = loop.schedule(after: DNSSDAdvertiser.confirmTimeout) { [weak box] in
                self.confirmTimer = nil
                guard let box, box === self.box, !self.announced, !self.cancelled else { return }
                self.logger.info("registration not confirmed in time; registering again", metadata: ["name": "\(name)"])
                self.loop.close(box)
                self.box = nil
                self.register()
            }
        } else {
            failed(error, operation: "registering '\(name)'")
        }
    }

    private func registerReply(box: DNSSDCallbackBox, flags: DNSServiceFlags, error: DNSServiceErrorType, name: String) {
        guard box === self.box, !cancelled else { return }
        loop.cancelTimer(confirmTimer)
        confirmTimer = nil
        guard error == DNSSDErrorCode.noError else {
            loop.close(box)
            self.box = nil
            failed(error, operation: "registering '\(currentName)'")
            return
        }
        outageReported = false
        retryAttempts = 0
        loop.cancelTimer(signTimer)
        signTimer = nil
        consecutiveRenames = 0
        let registeredName = name.isEmpty ? currentName : name
        if registeredName != currentName {
            let oldName = currentName
            currentName = registeredName
            announced = false
            logger.notice("service name collision, renamed", metadata: ["old": "\(oldName)", "new": "\(registeredName)"])
            continuation.yield(.collision(oldName: oldName, newName: registeredName))
        }
        guard !announced else { return }
        announced = true
        forgetOwnInstance()
        let instance = ServiceInstance(name: registeredName, type: registration.type.rawValue, domain: registration.domain ?? "local")
        DNSSDOwnServices.shared.insert(instance)
        ownInstance = instance
        logger.info("service registered", metadata: ["name": "\(registeredName)", "type": "\(registration.type)", "port": "\(registration.port)"])
        continuation.yield(.registered(name: registeredName))
    }

    /// `DNSServiceProcessResult` failed: the daemon connection is gone.
    private func lost(_ error: DNSServiceErrorType) {
        guard !cancelled else { return }
        box = nil  // the loop closed it
        failed(error, operation: "registering '\(currentName)'")
    }

    /// Reports `error` and schedules a retry where one can help.
    private func failed(_ error: DNSServiceErrorType, operation: String) {
        announced = false
        forgetOwnInstance()
        if error == DNSSDErrorCode.nameConflict && consecutiveRenames < Self.maxRenames {
            // Avahi renames on collisions with other hosts itself, but a name held by another client
            // of the same daemon fails at once (AVAHI_ERR_LOCAL_COLLISION): pick the next name here.
            consecutiveRenames += 1
            let oldName = currentName
            currentName = Self.alternativeName(for: oldName)
            logger.notice("service name taken on this host, renaming", metadata: ["old": "\(oldName)", "new": "\(currentName)"])
            continuation.yield(.collision(oldName: oldName, newName: currentName))
            retryTimer = loop.schedule(after: .zero) { self.register() }
            return
        }
        if DNSSDErrorCode.isPermanent(error) {
            logger.error("registration failed", metadata: ["error": "\(DNSSDErrorCode.describe(error))"])
            continuation.yield(.failure(.backendFailure(operation: operation, message: DNSSDErrorCode.describe(error))))
            return
        }
        if DNSSDErrorCode.meansDaemonUnavailable(error) {
            if !outageReported {
                outageReported = true
                let reason = DNSSDErrorCode.daemonReason(error)
                logger.warning("mDNS daemon unavailable; retrying", metadata: ["reason": "\(reason)"])
                continuation.yield(.daemonUnavailable(reason: reason))
            }
            watchForDaemon()
        } else {
            continuation.yield(.failure(.backendFailure(operation: operation, message: DNSSDErrorCode.describe(error))))
        }
        scheduleRetry()
    }

    private func scheduleRetry() {
        guard !cancelled, retryTimer == nil else { return }
        retryAttempts += 1
        let delay = DNSSDRetry.delay(afterAttempts: retryAttempts)
        retryTimer = loop.schedule(after: delay) { self.register() }
    }

    /// While the daemon is away, looks for a sign of its return every 250 ms (see `DNSSDDaemonSign`)
    /// and then registers at once, rather than waiting out a retry delay of up to five seconds: the
    /// service is announced again within about a second of the daemon's return, however long it was gone.
    private func watchForDaemon() {
        guard !cancelled, signTimer == nil, let accepting = DNSSDDaemonSign.daemonAccepting() else { return }
        daemonSeenAccepting = accepting
        signTimer = loop.schedule(after: DNSSDDaemonSign.interval) { self.checkDaemonSign() }
    }

    private func checkDaemonSign() {
        signTimer = nil
        guard !cancelled, box == nil, let accepting = DNSSDDaemonSign.daemonAccepting() else { return }
        let cameBack = accepting && daemonSeenAccepting == false
        daemonSeenAccepting = accepting
        if cameBack {
            logger.debug("avahi-daemon accepts connections again; registering now", metadata: ["name": "\(currentName)"])
            loop.cancelTimer(retryTimer)
            retryTimer = nil
            retryAttempts = 0
            register()
        }
        // A failed attempt just now may have started the next look already.
        if signTimer == nil {
            signTimer = loop.schedule(after: DNSSDDaemonSign.interval) { self.checkDaemonSign() }
        }
    }

    private func applyTXT(_ txt: TXTRecord) {
        registration.txt = txt
        guard let ref = box?.ref else { return }  // the next registration uses it
        let bytes = txt.wireFormat
        guard bytes.count <= Int(UInt16.max) else {
            continuation.yield(.failure(.invalidTXT("the TXT record is \(bytes.count) bytes; dns_sd takes at most 65535")))
            return
        }
        let error = bytes.withUnsafeBytes { raw in
            DNSServiceUpdateRecord(ref, nil, 0, UInt16(raw.count), raw.baseAddress, 0)
        }
        if error != DNSSDErrorCode.noError {
            continuation.yield(.failure(.backendFailure(operation: "updating the TXT record", message: DNSSDErrorCode.describe(error))))
        } else {
            logger.debug("TXT updated", metadata: ["name": "\(currentName)"])
        }
    }

    /// The next name to try after a collision, as Avahi picks them: `Desk` → `Desk #2` → `Desk #3`,
    /// shortening the base so the result stays within 63 bytes of UTF-8.
    static func alternativeName(for name: String) -> String {
        var base = name
        var number = 2
        if let hash = name.range(of: " #", options: .backwards) {
            let digits = name[hash.upperBound...]
            if !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber), let value = Int(digits), value < Int.max {
                base = String(name[..<hash.lowerBound])
                number = value + 1
            }
        }
        let suffix = " #\(number)"
        while base.utf8.count + suffix.utf8.count > 63, !base.isEmpty {
            base.removeLast()
        }
        return base + suffix
    }

    private func forgetOwnInstance() {
        if let ownInstance { DNSSDOwnServices.shared.remove(ownInstance) }
        ownInstance = nil
    }
}
