#if canImport(CAvahi)
import CAvahi
import Foundation
import Logging
import Synchronization

/// Keeps one service registered with avahi-daemon through an entry group: registers when the
/// client runs, renames on collision (`Desk` → `Desk #2`), re-registers after daemon restarts,
/// and withdraws it (goodbye packets) on cancel.
///
/// State lives on the Avahi event-loop thread or under its lock (see `AvahiConnection`).
final class AvahiAdvertiser: AvahiConnectionDelegate, @unchecked Sendable {
    private let connection: AvahiConnection
    private var registration: ServiceRegistration
    private var currentName: String
    private var group: OpaquePointer?
    private var client: OpaquePointer?
    private let continuation: AsyncStream<AdvertiseEvent>.Continuation
    private let logger: Logger
    private var unmanagedSelf: Unmanaged<AvahiAdvertiser>?
    /// Set by the first ``cancel()``, so a second one neither stops the connection nor releases `self` again.
    private let cancelClaimed = Atomic<Bool>(false)
    /// Where start and stop run, in that order, off the caller's thread (they may block in D-Bus calls).
    private let control = DispatchQueue(label: "oa-bridge.avahi.advertiser")
    /// The interface to announce on (``ServiceRegistration/interface``), or every interface.
    private let interface: AvahiIfIndex

    init(registration: ServiceRegistration, connection: AvahiConnection, continuation: AsyncStream<AdvertiseEvent>.Continuation, logger: Logger) {
        self.registration = registration
        self.currentName = registration.name
        self.interface = (try? NetworkInterfaceName.index(of: registration.interface)).flatMap { $0.map { AvahiIfIndex($0) } }
            ?? AvahiConstants.anyInterface
        self.connection = connection
        self.continuation = continuation
        self.logger = logger
    }

    /// Connects, on ``control``: `avahi_client_new` talks D-Bus synchronously, and a bus that does not answer (a
    /// stopped dbus-daemon) holds it for libdbus's 25 s timeout, which must hold up neither the caller (a task on the
    /// cooperative pool) nor a shutdown.
    ///
    /// A failure to start ends the event stream with it.
    func start() {
        unmanagedSelf = Unmanaged.passRetained(self)
        connection.delegate = self
        control.async {
            do throws(DiscoveryError) {
                try self.connection.start()
            } catch {
                self.continuation.yield(.failure(error))
                self.continuation.finish()
            }
        }
    }

    /// Replaces the TXT record, in place when the service is registered.
    func updateTXT(_ txt: TXTRecord) {
        connection.withLock {
            registration.txt = txt
            guard let group, avahi_entry_group_is_empty(group) == 0 else { return }
            let result = AvahiStrings.withStringList(txt) { list in
                avahi_entry_group_update_service_txt_strlst(
                    group, interface, AvahiConstants.anyProtocol, AvahiPublishFlags(rawValue: 0),
                    currentName, registration.type.rawValue, registration.domain, list)
            }
            if result < 0 {
                continuation.yield(.failure(.backendFailure(operation: "updating the TXT record", message: AvahiConnection.describe(error: result))))
            }
        }
    }

    /// Withdraws the service and ends the event stream, without waiting: the stop runs on ``control``, so a
    /// caller (a graceful-shutdown handler, a signal) never blocks on the event loop's lock, which a D-Bus call that
    /// gets no answer (a stopped dbus-daemon) holds for up to libdbus's 25 s timeout.
    ///
    /// `completion` runs once the client is freed (goodbye packets on their way). Use ``withdraw()`` to wait for
    /// that.
    func cancel(completion: (@Sendable () -> Void)? = nil) {
        // Idempotent: the announcer cancels on graceful shutdown and again when its run ends.
        guard cancelClaimed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else {
            completion?()
            return
        }
        // After the start on the same serial queue: the poll is never freed under an avahi_client_new in progress.
        control.async {
            self.connection.stop {
                if let group = self.group { avahi_entry_group_free(group) }
                self.group = nil
            }
            self.continuation.finish()
            self.unmanagedSelf?.release()
            self.unmanagedSelf = nil
            completion?()
        }
    }

    /// Withdraws the service and returns once the client is freed, so goodbye packets are on their way; waits at most
    /// ``withdrawLimit`` and blocks no thread.
    func withdraw() async {
        let (done, signal) = AsyncStream.makeStream(of: Void.self)
        cancel { signal.finish() }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { for await _ in done {} }
            group.addTask { try? await Task.sleep(for: AvahiAdvertiser.withdrawLimit) }
            await group.next()
            group.cancelAll()
        }
    }

    /// How long ``withdraw()`` waits for the stop; past it the process may exit without the goodbyes.
    static let withdrawLimit: Duration = .seconds(1)

    // MARK: - AvahiConnectionDelegate (event-loop thread)

    func avahiClientRunning(_ client: OpaquePointer) {
        self.client = client
        register(on: client)
    }

    func avahiClientRegistering(_ client: OpaquePointer) {
        self.client = client
        if let group { avahi_entry_group_reset(group) }
    }

    func avahiClientLost(reason: String) {
        // The entry group died with the client; the connection frees the client.
        group = nil
        client = nil
        continuation.yield(.daemonUnavailable(reason: reason))
    }

    // MARK: - Entry group

    private func register(on client: OpaquePointer) {
        if group == nil {
            let userdata = unmanagedSelf.map { UnsafeMutableRawPointer($0.toOpaque()) }
            group = avahi_entry_group_new(client, { group, state, userdata in
                guard let userdata, let group else { return }
                let advertiser = Unmanaged<AvahiAdvertiser>.fromOpaque(userdata).takeUnretainedValue()
                advertiser.groupStateChanged(group, state)
            }, userdata)
        }
        guard let group else {
            let error = avahi_client_errno(client)
            continuation.yield(.failure(.backendFailure(operation: "creating an Avahi entry group", message: AvahiConnection.describe(error: error))))
            return
        }
        guard avahi_entry_group_is_empty(group) != 0 else { return }
        let result = AvahiStrings.withStringList(registration.txt) { list in
            avahi_entry_group_add_service_strlst(
                group, interface, AvahiConstants.anyProtocol, AvahiPublishFlags(rawValue: 0),
                currentName, registration.type.rawValue, registration.domain, nil, registration.port, list)
        }
        if Int(result) == AVAHI_ERR_COLLISION {
            rename()
            return
        }
        guard result >= 0 else {
            continuation.yield(.failure(.backendFailure(operation: "adding service '\(currentName)'", message: AvahiConnection.describe(error: result))))
            return
        }
        let committed = avahi_entry_group_commit(group)
        if committed < 0 {
            continuation.yield(.failure(.backendFailure(operation: "committing service '\(currentName)'", message: AvahiConnection.describe(error: committed))))
        }
    }

    private func groupStateChanged(_ changed: OpaquePointer, _ state: AvahiEntryGroupState) {
        switch state {
        case AVAHI_ENTRY_GROUP_ESTABLISHED:
            logger.info("service registered", metadata: ["name": "\(currentName)", "type": "\(registration.type)", "port": "\(registration.port)"])
            continuation.yield(.registered(name: currentName))
        case AVAHI_ENTRY_GROUP_COLLISION:
            rename()
        case AVAHI_ENTRY_GROUP_FAILURE:
            let error = client.map { avahi_client_errno($0) } ?? Int32(AVAHI_ERR_FAILURE)
            continuation.yield(.failure(.backendFailure(operation: "registering '\(currentName)'", message: AvahiConnection.describe(error: error))))
        default:
            break
        }
    }

    /// Picks Avahi's next alternative name and registers again under it.
    private func rename() {
        let oldName = currentName
        if let alternative = avahi_alternative_service_name(currentName) {
            currentName = String(cString: alternative)
            avahi_free(alternative)
        } else {
            currentName = "\(oldName) #2"
        }
        logger.notice("service name collision, renaming", metadata: ["old": "\(oldName)", "new": "\(currentName)"])
        continuation.yield(.collision(oldName: oldName, newName: currentName))
        if let group { avahi_entry_group_reset(group) }
        if let client { register(on: client) }
    }
}
#endif
