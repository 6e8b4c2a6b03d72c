import CDNSSD
import Foundation
import Logging

/// Browses one service type with `DNSServiceBrowse`, resolves every instance on every interface
/// with `DNSServiceResolve`, looks up the host's addresses with `DNSServiceQueryRecord` (A and AAAA),
/// and merges it all into `added` / `updated` / `removed` events.
///
/// Avahi's compatibility library reports each instance (and each address) once per IP protocol on
/// the same interface, so adds and removes are counted rather than assumed unique.
///
/// All state lives on the run loop's thread.
final class DNSSDBrowser: @unchecked Sendable {
    /// One instance as seen on one interface.
    private struct SightingKey: Hashable {
        var instance: ServiceInstance
        var interface: UInt32
    }

    private final class Sighting {
        let key: SightingKey
        /// Browse adds minus removes (Avahi's layer sends one per IP protocol).
        var count = 0
        /// The type and domain as the browse reply spelled them, for `DNSServiceResolve`.
        var replyType: String
        var replyDomain: String
        var resolver: DNSSDCallbackBox?
        var resolveAttempts = 0
        var hostName: String?
        var port: UInt16 = 0
        var txt = TXTRecord()
        var resolvedAt: ContinuousClock.Instant?
        var queries: [DNSSDCallbackBox] = []
        /// Address adds minus removes, per address.
        var addresses: [ServiceAddress: Int] = [:]

        init(key: SightingKey, replyType: String, replyDomain: String) {
            self.key = key
            self.replyType = replyType
            self.replyDomain = replyDomain
        }
    }

    /// How long a first resolution may wait for an address before `added` goes out without one.
    static let addressWait: Duration = .milliseconds(1500)
    /// Once one address is known, how long `added` waits for the other family.
    static let familyWait: Duration = .milliseconds(200)
    /// How long changes to an announced instance are gathered into one `updated`.
    static let updateDelay: Duration = .milliseconds(150)
    /// After the daemon returns: instances not seen again within this time are reported removed.
    static let staleGrace: Duration = .seconds(3)

    private let loop: DNSSDRunLoop
    private let type: ServiceType
    private let domain: String
    /// The interface index to browse on; 0 for every interface.
    private let interface: UInt32
    private let continuation: AsyncStream<BrowseEvent>.Continuation
    private let logger: Logger

    private var browser: DNSSDCallbackBox?
    private var sightings: [SightingKey: Sighting] = [:]
    /// What was announced, first-seen times, and what is being resolved again after an outage (updates of those
    /// wait for addresses too).
    private var aggregator = BrowseAggregator()
    private var addressTimers: [ServiceInstance: DNSSDRunLoop.TimerID] = [:]
    /// Instances past their address wait: announce even without addresses.
    private var addressWaitOver: Set<ServiceInstance> = []
    /// Instances with a first address, waiting `familyWait` for the other family.
    private var addressSettling: Set<ServiceInstance> = []
    /// Pending `updated` reports, sent `updateDelay` after the first change.
    private var updateTimers: [ServiceInstance: DNSSDRunLoop.TimerID] = [:]
    private var outageReported = false
    /// The browse restarted with instances announced: reconcile them once it runs again.
    private var reconcileOnRestart = false
    /// Retries since the last success; sets the delay (see `DNSSDRetry`).
    private var retryAttempts = 0
    private var retryTimer: DNSSDRunLoop.TimerID?
    /// While the daemon is away: the next look for a sign of its return, and what the last look saw.
    private var signTimer: DNSSDRunLoop.TimerID?
    /// While browsing, looks every second whether avahi-daemon still accepts connections: the
    /// compatibility layer does not always report a daemon that died (seen in the lab, about one
    /// restart in six), and a browse that waits on a dead daemon never learns anything again.
    private var livenessTimer: DNSSDRunLoop.TimerID?
    private var daemonSeenAccepting: Bool?
    private var browseStarted: ContinuousClock.Instant?
    private var allForNowSent = false
    private var allForNowTimer: DNSSDRunLoop.TimerID?
    private var stopped = false

    init(type: ServiceType, domain: String?, interface: UInt32 = DNSSDConstants.interfaceAny, loop: DNSSDRunLoop,
         continuation: AsyncStream<BrowseEvent>.Continuation, logger: Logger) {
        self.interface = interface
        self.type = type
        self.domain = domain.map { $0.hasSuffix(".") ? $0 : $0 + "." } ?? "local."
        self.loop = loop
        self.continuation = continuation
        self.logger = logger
    }

    /// Starts browsing (asynchronously, on the loop).
    func start() {
        loop.perform { self.startBrowse() }
    }

    /// Deallocates every ref, ends the stream and the loop.
    ///
    /// Safe to call more than once.
    func cancel() {
        loop.perform {
            self.stopped = true
            self.continuation.finish()
        }
        loop.stop()
    }

    // MARK: - Browse

    private func startBrowse() {
        guard !stopped else { return }
        retryTimer = nil
        let box = DNSSDCallbackBox()
        box.browse = { [unowned box] flags, interface, error, name, type, domain in
            self.browseReply(box: box, flags: flags, interface: interface, error: error, name: name, type: type, domain: domain)
        }
        box.failed = { error in
            self.daemonLost(error)
        }
        let type = self.type.rawValue
        let domain = self.domain
        let interface = self.interface
        let error = loop.open(box) { context, ref in
            DNSServiceBrowse(ref, 0, interface, type, domain, DNSSDCallbacks.browse, context)
        }
        guard error == DNSSDErrorCode.noError else {
            if DNSSDErrorCode.meansDaemonUnavailable(error) {
                daemonLost(error)
            } else if DNSSDErrorCode.isPermanent(error) {
                continuation.yield(.failure(.backendFailure(operation: "browsing \(type)", message: DNSSDErrorCode.describe(error))))
            } else {
                browseFailed(error)
            }
            return
        }
        browser = box
        browseStarted = .now
        loop.cancelTimer(signTimer)
        signTimer = nil
        allForNowSent = false
        loop.cancelTimer(allForNowTimer)
        allForNowTimer = loop.schedule(after: .seconds(1)) { self.checkAllForNow(force: false) }
        logger.debug("browsing", metadata: ["type": "\(type)", "domain": "\(domain)"])
        retryAttempts = 0
        scheduleLivenessCheck()
        if outageReported {
            outageReported = false
            continuation.yield(.daemonAvailable)
        }
        if reconcileOnRestart {
            reconcileOnRestart = false
            // What was announced before the restart and is not seen again soon has gone.
            let stale = aggregator.daemonReturned()
            loop.schedule(after: Self.staleGrace) { self.dropStale(stale) }
        }
    }

    private func browseReply(box: DNSSDCallbackBox, flags: DNSServiceFlags, interface: UInt32, error: DNSServiceErrorType,
                             name: String, type: String, domain: String) {
        guard box === browser, !stopped else { return }
        guard error == DNSSDErrorCode.noError else {
            if DNSSDErrorCode.meansDaemonUnavailable(error) {
                daemonLost(error)
            } else {
                browseFailed(error)
            }
            return
        }
        let instance = ServiceInstance(name: name, type: DNSSDValues.withoutTrailingDot(type), domain: domain)
        let key = SightingKey(instance: instance, interface: interface)
        if flags & DNSSDConstants.flagsAdd != 0 {
            logger.trace("browse add", metadata: ["service": "\(instance)", "interface": "\(interface)"])
            aggregator.sighted(instance, at: .now)
            let sighting = sightings[key] ?? Sighting(key: key, replyType: type, replyDomain: domain)
            sightings[key] = sighting
            sighting.count += 1
            if sighting.resolver == nil && sighting.hostName == nil { resolve(sighting) }
        } else if let sighting = sightings[key] {
            sighting.count -= 1
            if sighting.count <= 0 {
                drop(sighting)
                publish(instance)
            }
        }
        if flags & DNSSDConstants.flagsMoreComing == 0 { checkAllForNow(force: false) }
    }

    // MARK: - Resolve

    private func resolve(_ sighting: Sighting) {
        sighting.resolveAttempts += 1
        let box = DNSSDCallbackBox()
        box.resolve = { [unowned box] flags, interface, error, host, port, txt in
            self.resolveReply(box: box, sighting: sighting, error: error, host: host, port: port, txt: txt)
        }
        box.failed = { [unowned box] error in
            self.resolverFailed(box: box, sighting: sighting, error: error)
        }
        let name = sighting.key.instance.name
        let type = sighting.replyType
        let domain = sighting.replyDomain
        let error = loop.open(box) { context, ref in
            DNSServiceResolve(ref, 0, sighting.key.interface, name, type, domain, DNSSDCallbacks.resolve, context)
        }
        if error == DNSSDErrorCode.noError {
            sighting.resolver = box
        } else {
            logger.debug("resolve did not start", metadata: ["service": "\(sighting.key.instance)", "error": "\(DNSSDErrorCode.describe(error))"])
            retryResolve(sighting)
        }
    }

    private func resolveReply(box: DNSSDCallbackBox, sighting: Sighting, error: DNSServiceErrorType, host: String, port: UInt16, txt: [UInt8]) {
        guard box === sighting.resolver, sightings[sighting.key] === sighting, !stopped else { return }
        guard error == DNSSDErrorCode.noError else {
            resolverFailed(box: box, sighting: sighting, error: error)
            return
        }
        let hostName = DNSSDValues.withoutTrailingDot(host)
        let record: TXTRecord
        do {
            record = try TXTRecord(wireFormat: txt)
        } catch {
            logger.debug("unreadable TXT record", metadata: ["service": "\(sighting.key.instance)", "error": "\(error)"])
            record = TXTRecord()
        }
        let hostChanged = sighting.hostName?.lowercased() != hostName.lowercased()
        sighting.hostName = hostName
        sighting.port = port
        sighting.txt = record
        sighting.resolvedAt = .now
        sighting.resolveAttempts = 0
        if hostChanged { queryAddresses(sighting, host: host) }
        publish(sighting.key.instance)
        let instance = sighting.key.instance
        if aggregator.awaitsFirstReport(instance), addressTimers[instance] == nil {
            armAddressTimer(instance, after: Self.addressWait)
        }
    }

    /// (Re)arms the timer after which `instance` is announced with whatever addresses it has.
    private func armAddressTimer(_ instance: ServiceInstance, after delay: Duration) {
        loop.cancelTimer(addressTimers[instance])
        addressTimers[instance] = loop.schedule(after: delay) {
            self.addressTimers[instance] = nil
            self.addressWaitOver.insert(instance)
            self.publish(instance)
            self.checkAllForNow(force: false)
        }
    }

    private func resolverFailed(box: DNSSDCallbackBox, sighting: Sighting, error: DNSServiceErrorType) {
        loop.close(box)
        if sighting.resolver === box { sighting.resolver = nil }
        guard sightings[sighting.key] === sighting, !stopped else { return }
        logger.debug("resolver failed", metadata: ["service": "\(sighting.key.instance)", "interface": "\(sighting.key.interface)",
                                                   "error": "\(DNSSDErrorCode.describe(error))"])
        // A resolver that has delivered keeps its last answer; one that never did tries again.
        if sighting.hostName == nil { retryResolve(sighting) }
    }

    private func retryResolve(_ sighting: Sighting) {
        guard sighting.resolveAttempts < 3 else {
            continuation.yield(.failure(.backendFailure(operation: "resolving '\(sighting.key.instance.name)'",
                                                        message: "no answer after \(sighting.resolveAttempts) attempts")))
            return
        }
        loop.schedule(after: .seconds(1)) {
            guard self.sightings[sighting.key] === sighting, sighting.resolver == nil, !self.stopped else { return }
            self.resolve(sighting)
        }
    }

    // MARK: - Addresses

    /// Starts A and AAAA queries for `host` on the sighting's interface (replacing older ones).
    private func queryAddresses(_ sighting: Sighting, host: String) {
        for query in sighting.queries { loop.close(query) }
        sighting.queries.removeAll()
        sighting.addresses.removeAll()
        let fullName = host.hasSuffix(".") ? host : host + "."
        for rrtype in [DNSSDConstants.typeA, DNSSDConstants.typeAAAA] {
            let box = DNSSDCallbackBox()
            box.query = { [unowned box] flags, interface, error, rrtype, rdata in
                self.queryReply(box: box, sighting: sighting, flags: flags, interface: interface, error: error, rrtype: rrtype, rdata: rdata)
            }
            box.failed = { [unowned box] _ in
                sighting.queries.removeAll { $0 === box }
            }
            let interface = sighting.key.interface
            let error = loop.open(box) { context, ref in
                DNSServiceQueryRecord(ref, 0, interface, fullName, rrtype, DNSSDConstants.classIN, DNSSDCallbacks.query, context)
            }
            if error == DNSSDErrorCode.noError {
                sighting.queries.append(box)
            } else {
                logger.warning("address query did not start", metadata: ["host": "\(fullName)", "rrtype": "\(rrtype)",
                                                                          "error": "\(DNSSDErrorCode.describe(error))"])
            }
        }
    }

    private func queryReply(box: DNSSDCallbackBox, sighting: Sighting, flags: DNSServiceFlags, interface: UInt32,
                            error: DNSServiceErrorType, rrtype: UInt16, rdata: [UInt8]) {
        guard sighting.queries.contains(where: { $0 === box }), sightings[sighting.key] === sighting, !stopped else { return }
        guard error == DNSSDErrorCode.noError else {
            logger.debug("address query failed", metadata: ["service": "\(sighting.key.instance)", "error": "\(DNSSDErrorCode.describe(error))"])
            loop.close(box)
            sighting.queries.removeAll { $0 === box }
            return
        }
        let index = interface != 0 ? interface : sighting.key.interface
        guard let address = DNSSDValues.address(rrtype: rrtype, rdata: rdata, interface: index) else { return }
        if flags & DNSSDConstants.flagsAdd != 0 {
            sighting.addresses[address, default: 0] += 1
        } else if let count = sighting.addresses[address] {
            sighting.addresses[address] = count > 1 ? count - 1 : nil
        }
        publish(sighting.key.instance)
    }

    // MARK: - Merging and reporting

    /// Merges every sighting of `instance` and reports what changed.
    private func publish(_ instance: ServiceInstance, flushUpdate: Bool = false) {
        let all = sightings.values.filter { $0.key.instance == instance }
        guard !all.isEmpty else {
            addressWaitOver.remove(instance)
            addressSettling.remove(instance)
            loop.cancelTimer(addressTimers.removeValue(forKey: instance))
            loop.cancelTimer(updateTimers.removeValue(forKey: instance))
            if let removed = aggregator.gone(instance) {
                logger.debug("removed", metadata: ["service": "\(instance)"])
                continuation.yield(removed)
            }
            return
        }
        let resolved = all.filter { $0.hostName != nil }
        guard let latest = resolved.max(by: { ($0.resolvedAt ?? .now) < ($1.resolvedAt ?? .now) }), let hostName = latest.hostName else { return }
        var addresses = Set<ServiceAddress>()
        for sighting in resolved {
            for (address, count) in sighting.addresses where count > 0 { addresses.insert(address) }
        }
        let firstResolution = aggregator.awaitsFirstReport(instance)
        let complete = resolved.allSatisfy { sighting in
            Set(sighting.addresses.filter { $0.value > 0 }.map(\.key.family)).count == 2
        }
        if firstResolution && !addressWaitOver.contains(instance) && !complete {
            // Wait for the first address; then, briefly, for both families on every interface the
            // instance was resolved on, so `added` is complete.
            if !addresses.isEmpty && !addressSettling.contains(instance) {
                addressSettling.insert(instance)
                armAddressTimer(instance, after: Self.familyWait)
            }
            return
        }
        let interfaces = Array(Set(resolved.compactMap { DNSSDValues.interfaceName($0.key.interface) })).sorted()
        let isLocal = hostName.lowercased() == DNSSDValues.localHostName
        let service = ResolvedService(
            instance: instance, hostName: hostName, port: latest.port, addresses: DNSSDValues.sorted(addresses),
            txt: latest.txt.dictionary, interfaces: interfaces,
            isLocal: isLocal, isOwn: isLocal && DNSSDOwnServices.shared.contains(instance))
        if aggregator.isAnnounced(instance) {
            if aggregator.endReresolving(instance) {
                loop.cancelTimer(addressTimers.removeValue(forKey: instance))
                addressWaitOver.remove(instance)
                addressSettling.remove(instance)
            }
            guard aggregator.changes(service) else { return }
            guard flushUpdate else {
                // Changes come record by record (TXT, then each address); report them together, and
                // not at all if the instance is gone within the delay (a goodbye removes addresses first).
                if updateTimers[instance] == nil {
                    updateTimers[instance] = loop.schedule(after: Self.updateDelay) {
                        self.updateTimers[instance] = nil
                        self.publish(instance, flushUpdate: true)
                    }
                }
                return
            }
            if let event = aggregator.report(service, at: .now) { continuation.yield(event) }
        } else {
            loop.cancelTimer(addressTimers.removeValue(forKey: instance))
            addressWaitOver.remove(instance)
            addressSettling.remove(instance)
            if let event = aggregator.report(service, at: .now) { continuation.yield(event) }
            checkAllForNow(force: false)
        }
    }

    /// Avahi's compatibility layer never says "all for now" (no `kDNSServiceFlagsMoreComing`), so
    /// `allForNow` goes out once per browse, a second after it started, when every instance seen
    /// so far has been announced (or at the latest four seconds after the start).
    private func checkAllForNow(force: Bool) {
        guard !allForNowSent, !stopped, browser != nil, let started = browseStarted else { return }
        let elapsed = ContinuousClock.now - started
        guard elapsed >= .seconds(1) else { return }
        let pending = Set(sightings.keys.map(\.instance)).subtracting(aggregator.announcedInstances)
        guard force || pending.isEmpty || elapsed >= .seconds(4) else {
            loop.cancelTimer(allForNowTimer)
            allForNowTimer = loop.schedule(after: .seconds(4) - elapsed) { self.checkAllForNow(force: true) }
            return
        }
        allForNowSent = true
        loop.cancelTimer(allForNowTimer)
        allForNowTimer = nil
        continuation.yield(.allForNow)
    }

    // MARK: - Daemon loss

    private func scheduleLivenessCheck() {
        loop.cancelTimer(livenessTimer)
        livenessTimer = loop.schedule(after: .seconds(1)) {
            self.livenessTimer = nil
            guard !self.stopped, self.browser != nil else { return }
            if DNSSDDaemonSign.daemonAccepting() == false {
                self.logger.debug("avahi-daemon no longer accepts connections; the browse is dead")
                self.daemonLost(DNSSDErrorCode.unknown)
            } else {
                self.scheduleLivenessCheck()
            }
        }
    }

    private func daemonLost(_ error: DNSServiceErrorType) {
        guard !stopped else { return }
        // Every ref of this browse went with the daemon connection; start over when it is back.
        restartLater()
        watchForDaemon()
        if !outageReported {
            outageReported = true
            let reason = DNSSDErrorCode.daemonReason(error)
            logger.warning("mDNS daemon unavailable; browsing again when it is back", metadata: ["reason": "\(reason)"])
            continuation.yield(.daemonUnavailable(reason: reason))
        }
    }

    /// The browse failed for another reason: report it, start over later.
    private func browseFailed(_ error: DNSServiceErrorType) {
        guard !stopped else { return }
        continuation.yield(.failure(.backendFailure(operation: "browsing \(type)", message: DNSSDErrorCode.describe(error))))
        restartLater()
    }

    /// Closes every ref and schedules a new browse; what was announced is kept until the new browse
    /// has had `staleGrace` to see it again.
    private func restartLater() {
        loop.cancelTimer(livenessTimer)
        livenessTimer = nil
        reconcileOnRestart = reconcileOnRestart || aggregator.hasAnnounced
        loop.close(browser)
        browser = nil
        for sighting in sightings.values { drop(sighting) }
        sightings.removeAll()
        for timer in addressTimers.values { loop.cancelTimer(timer) }
        addressTimers.removeAll()
        for timer in updateTimers.values { loop.cancelTimer(timer) }
        updateTimers.removeAll()
        addressWaitOver.removeAll()
        addressSettling.removeAll()
        loop.cancelTimer(allForNowTimer)
        allForNowTimer = nil
        scheduleRetry()
    }

    /// While the daemon is away, looks for a sign of its return every 250 ms (see `DNSSDDaemonSign`)
    /// and then browses at once, rather than waiting out a retry delay of up to five seconds.
    private func watchForDaemon() {
        guard !stopped, signTimer == nil, let accepting = DNSSDDaemonSign.daemonAccepting() else { return }
        daemonSeenAccepting = accepting
        signTimer = loop.schedule(after: DNSSDDaemonSign.interval) { self.checkDaemonSign() }
    }

    private func checkDaemonSign() {
        signTimer = nil
        guard !stopped, browser == nil, let accepting = DNSSDDaemonSign.daemonAccepting() else { return }
        let cameBack = accepting && daemonSeenAccepting == false
        daemonSeenAccepting = accepting
        if cameBack {
            logger.debug("avahi-daemon accepts connections again; browsing now")
            loop.cancelTimer(retryTimer)
            retryTimer = nil
            retryAttempts = 0
            startBrowse()
        }
        // A failed attempt just now may have started the next look already.
        if signTimer == nil {
            signTimer = loop.schedule(after: DNSSDDaemonSign.interval) { self.checkDaemonSign() }
        }
    }

    private func scheduleRetry() {
        guard !stopped, retryTimer == nil else { return }
        retryAttempts += 1
        let delay = DNSSDRetry.delay(afterAttempts: retryAttempts)
        retryTimer = loop.schedule(after: delay) { self.startBrowse() }
    }

    private func dropStale(_ stale: Set<ServiceInstance>) {
        guard !stopped else { return }
        let seen = Set(sightings.keys.map(\.instance))
        for event in aggregator.dropStale(stale, seen: seen) { continuation.yield(event) }
    }

    /// Closes a sighting's refs and forgets it.
    private func drop(_ sighting: Sighting) {
        loop.close(sighting.resolver)
        sighting.resolver = nil
        for query in sighting.queries { loop.close(query) }
        sighting.queries.removeAll()
        if sightings[sighting.key] === sighting { sightings.removeValue(forKey: sighting.key) }
    }
}
