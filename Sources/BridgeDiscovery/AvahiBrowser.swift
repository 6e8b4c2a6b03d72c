#if canImport(CAvahi)
import CAvahi
import Foundation
import Logging
import Synchronization

/// Browses one service type with avahi-daemon and resolves every instance it finds, keeping the
/// resolvers running so TXT, port and address changes arrive as `updated` events.
///
/// State lives on the Avahi event-loop thread or under its lock (see `AvahiConnection`).
final class AvahiBrowser: AvahiConnectionDelegate, @unchecked Sendable {
    /// One (interface, protocol) sighting of an instance, as Avahi reports them.
    private struct Sighting: Hashable {
        var interface: AvahiIfIndex
        var proto: AvahiProtocol
        var instance: ServiceInstance
    }

    /// What one resolver last said.
    private struct Resolution {
        var hostName: String
        var port: UInt16
        var address: ServiceAddress?
        var txt: TXTRecord
        var interface: String?
        var isLocal: Bool
        var isOwn: Bool
    }

    /// Resolver handle and its box for the C callback.
    private final class ResolverBox {
        let sighting: Sighting
        weak var browser: AvahiBrowser?
        var resolver: OpaquePointer?
        init(sighting: Sighting, browser: AvahiBrowser) {
            self.sighting = sighting
            self.browser = browser
        }
    }

    private let connection: AvahiConnection
    private let type: ServiceType
    private let domain: String?
    /// The interface to browse on, or every interface.
    private let interface: AvahiIfIndex
    private let continuation: AsyncStream<BrowseEvent>.Continuation
    private let logger: Logger
    private var unmanagedSelf: Unmanaged<AvahiBrowser>?
    /// Set by the first ``cancel()``.
    private let cancelClaimed = Atomic<Bool>(false)
    private var browser: OpaquePointer?
    private var resolvers: [Sighting: Unmanaged<ResolverBox>] = [:]
    private var resolutions: [Sighting: Resolution] = [:]
    /// What was announced, first-seen times, and what is being resolved again after an outage: the first report
    /// after the daemon returns waits for the other sightings too, so a service does not flicker to fewer addresses.
    private var aggregator = BrowseAggregator()
    /// After the daemon returns: instances not seen again by the next ALL_FOR_NOW are removed.
    private var staleAfterReconnect: Set<ServiceInstance>?
    private var daemonLost = false
    /// Instances with a publish already scheduled, so bursts of sightings become one event.
    private var pendingFlush: Set<ServiceInstance> = []

    /// How long to wait for an instance's other (interface, protocol) sightings before reporting it.
    private static let coalesceMilliseconds: UInt32 = 200

    init(type: ServiceType, domain: String?, interface: AvahiIfIndex = AvahiConstants.anyInterface, connection: AvahiConnection,
         continuation: AsyncStream<BrowseEvent>.Continuation, logger: Logger) {
        self.type = type
        self.domain = domain
        self.interface = interface
        self.connection = connection
        self.continuation = continuation
        self.logger = logger
    }

    func start() throws(DiscoveryError) {
        unmanagedSelf = Unmanaged.passRetained(self)
        connection.delegate = self
        try connection.start()
    }

    /// Frees every Avahi object and ends the stream.
    ///
    /// Must not be called on the Avahi thread.
    func cancel() {
        // Idempotent: a second cancel neither stops the connection nor releases `self` again.
        guard cancelClaimed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        connection.stop {
            self.freeObjects()
        }
        continuation.finish()
        unmanagedSelf?.release()
        unmanagedSelf = nil
    }

    // MARK: - AvahiConnectionDelegate (event-loop thread)

    func avahiClientRunning(_ client: OpaquePointer) {
        guard browser == nil else { return }
        if daemonLost {
            daemonLost = false
            staleAfterReconnect = aggregator.daemonReturned()
            continuation.yield(.daemonAvailable)
        }
        let userdata = unmanagedSelf.map { UnsafeMutableRawPointer($0.toOpaque()) }
        browser = avahi_service_browser_new(
            client, interface, AvahiConstants.anyProtocol, type.rawValue, domain,
            AvahiLookupFlags(rawValue: 0),
            { serviceBrowser, interface, proto, event, name, type, domain, _, userdata in
                guard let userdata, let serviceBrowser, let client = avahi_service_browser_get_client(serviceBrowser) else { return }
                let browser = Unmanaged<AvahiBrowser>.fromOpaque(userdata).takeUnretainedValue()
                browser.browserEvent(interface: interface, proto: proto, event: event,
                                     name: AvahiStrings.string(name), type: AvahiStrings.string(type),
                                     domain: AvahiStrings.string(domain), client: client)
            }, userdata)
        if browser == nil {
            let error = avahi_client_errno(client)
            continuation.yield(.failure(.backendFailure(operation: "browsing \(type)", message: AvahiConnection.describe(error: error))))
        }
    }

    func avahiClientRegistering(_ client: OpaquePointer) {}

    func avahiClientLost(reason: String) {
        // Objects made on the old client are gone with it; forget them without freeing.
        browser = nil
        for box in resolvers.values { box.release() }
        resolvers.removeAll()
        resolutions.removeAll()
        if !daemonLost {
            daemonLost = true
            continuation.yield(.daemonUnavailable(reason: reason))
        }
    }

    // MARK: - Browser and resolver events

    private func browserEvent(interface: AvahiIfIndex, proto: AvahiProtocol, event: AvahiBrowserEvent,
                              name: String, type: String, domain: String, client: OpaquePointer) {
        switch event {
        case AVAHI_BROWSER_NEW:
            let instance = ServiceInstance(name: name, type: type, domain: domain)
            let sighting = Sighting(interface: interface, proto: proto, instance: instance)
            aggregator.sighted(instance, at: .now)
            guard resolvers[sighting] == nil else { return }
            startResolver(for: sighting, client: client)
        case AVAHI_BROWSER_REMOVE:
            let instance = ServiceInstance(name: name, type: type, domain: domain)
            let sighting = Sighting(interface: interface, proto: proto, instance: instance)
            if let unmanagedBox = resolvers.removeValue(forKey: sighting) {
                if let resolver = unmanagedBox.takeUnretainedValue().resolver { avahi_service_resolver_free(resolver) }
                unmanagedBox.release()
            }
            resolutions.removeValue(forKey: sighting)
            if resolvers.keys.contains(where: { $0.instance == instance }) {
                scheduleFlush(instance)  // other sightings remain: report once they settle
            } else {
                publish(instance)
            }
        case AVAHI_BROWSER_ALL_FOR_NOW:
            if let stale = staleAfterReconnect {
                staleAfterReconnect = nil
                let seen = Set(resolvers.keys.map(\.instance))
                for event in aggregator.dropStale(stale, seen: seen) { continuation.yield(event) }
            }
            continuation.yield(.allForNow)
        case AVAHI_BROWSER_FAILURE:
            let error = avahi_client_errno(client)
            continuation.yield(.failure(.backendFailure(operation: "browsing \(self.type)", message: AvahiConnection.describe(error: error))))
        default:
            break  // CACHE_EXHAUSTED carries no news for callers.
        }
    }

    private func resolverEvent(box: ResolverBox, interface: AvahiIfIndex, event: AvahiResolverEvent, hostName: String,
                               address: UnsafePointer<AvahiAddress>?, port: UInt16,
                               txt: UnsafeMutablePointer<AvahiStringList>?, flags: AvahiLookupResultFlags) {
        let sighting = box.sighting
        switch event {
        case AVAHI_RESOLVER_FOUND:
            if let previous = resolutions[sighting], previous.hostName != hostName {
                // The SRV record now names another host. Avahi's resolver drops the old SRV but keeps
                // the old host's address record, reports the new host with it, and ignores the new
                // host's addresses (avahi-core/resolve-service.c: `if (!r->address_record)`). So a
                // name taken over by another machine would keep pointing at the old one. A fresh
                // resolver looks the new host's addresses up; until it answers, this sighting has none.
                logger.debug("service moved to another host; resolving again", metadata: [
                    "service": "\(sighting.instance)", "old": "\(previous.hostName)", "new": "\(hostName)"])
                restartResolver(box: box)
                return
            }
            resolutions[sighting] = Resolution(
                hostName: hostName,
                port: port,
                address: address.flatMap { AvahiStrings.address($0, interface: interface) },
                txt: AvahiStrings.txtRecord(from: txt),
                interface: AvahiStrings.interfaceName(interface),
                isLocal: flags.rawValue & AVAHI_LOOKUP_RESULT_LOCAL.rawValue != 0,
                isOwn: flags.rawValue & AVAHI_LOOKUP_RESULT_OUR_OWN.rawValue != 0)
            let instance = sighting.instance
            let pending = resolvers.keys.contains { $0.instance == instance && resolutions[$0] == nil }
            if (!aggregator.isAnnounced(instance) && pending) || aggregator.isReresolving(instance) {
                scheduleFlush(instance)  // first report waits briefly for the other address family
            } else {
                publish(instance)
            }
        case AVAHI_RESOLVER_FAILURE:
            logger.debug("resolver failed", metadata: ["service": "\(sighting.instance)", "interface": "\(interface)"])
        default:
            break
        }
    }

    /// Starts resolving one sighting; reports a failure if Avahi refuses.
    @discardableResult
    private func startResolver(for sighting: Sighting, client: OpaquePointer) -> Bool {
        let instance = sighting.instance
        let box = ResolverBox(sighting: sighting, browser: self)
        let unmanagedBox = Unmanaged.passRetained(box)
        box.resolver = avahi_service_resolver_new(
            client, sighting.interface, sighting.proto, instance.name, instance.type, instance.domain, sighting.proto,
            AvahiLookupFlags(rawValue: 0),
            { _, interface, _, event, _, _, _, hostName, address, port, txt, flags, userdata in
                guard let userdata else { return }
                let box = Unmanaged<ResolverBox>.fromOpaque(userdata).takeUnretainedValue()
                withExtendedLifetime(box) {
                    box.browser?.resolverEvent(box: box, interface: interface, event: event,
                                               hostName: AvahiStrings.string(hostName), address: address,
                                               port: port, txt: txt, flags: flags)
                }
            }, UnsafeMutableRawPointer(unmanagedBox.toOpaque()))
        guard box.resolver != nil else {
            unmanagedBox.release()
            let error = avahi_client_errno(client)
            continuation.yield(.failure(.backendFailure(operation: "resolving '\(instance.name)'", message: AvahiConnection.describe(error: error))))
            return false
        }
        resolvers[sighting] = unmanagedBox
        return true
    }

    /// Replaces the resolver of `box`'s sighting with a new one (called from its own callback, which
    /// Avahi allows to free it; the box itself is released after the callback has returned).
    private func restartResolver(box: ResolverBox) {
        let sighting = box.sighting
        guard let unmanagedBox = resolvers[sighting], unmanagedBox.takeUnretainedValue() === box,
              let resolver = box.resolver, let client = avahi_service_resolver_get_client(resolver) else { return }
        resolvers.removeValue(forKey: sighting)
        resolutions.removeValue(forKey: sighting)
        box.resolver = nil
        box.browser = nil
        avahi_service_resolver_free(resolver)
        connection.schedule(afterMilliseconds: 0) { unmanagedBox.release() }
        if !startResolver(for: sighting, client: client) {
            publish(sighting.instance)
        }
    }

    private func scheduleFlush(_ instance: ServiceInstance) {
        guard pendingFlush.insert(instance).inserted else { return }
        connection.schedule(afterMilliseconds: AvahiBrowser.coalesceMilliseconds) { [weak self] in
            guard let self else { return }
            self.pendingFlush.remove(instance)
            self.publish(instance)
        }
    }

    /// Merges every sighting of `instance` and reports what changed.
    private func publish(_ instance: ServiceInstance) {
        // During a daemon outage nothing is known; what was announced stays until the daemon is
        // back and its next ALL_FOR_NOW settles it (a coalescing timer may still fire meanwhile).
        guard !daemonLost else { return }
        aggregator.endReresolving(instance)
        let parts = resolutions.filter { $0.key.instance == instance }.map(\.value)
        guard let latest = parts.first else {
            if resolvers.keys.contains(where: { $0.instance == instance }) { return }
            if let removed = aggregator.gone(instance) { continuation.yield(removed) }
            return
        }
        var addresses: [ServiceAddress] = []
        for address in parts.compactMap(\.address) where !addresses.contains(address) {
            addresses.append(address)
        }
        addresses.sort { ($0.family == .ipv4 ? 0 : 1, $0.ip) < ($1.family == .ipv4 ? 0 : 1, $1.ip) }
        let interfaces = Array(Set(parts.compactMap(\.interface))).sorted()
        let service = ResolvedService(
            instance: instance, hostName: latest.hostName, port: latest.port, addresses: addresses,
            txt: latest.txt.dictionary, interfaces: interfaces,
            isLocal: parts.contains(where: \.isLocal), isOwn: parts.contains(where: \.isOwn))
        if let event = aggregator.report(service, at: .now) { continuation.yield(event) }
    }

    private func freeObjects() {
        for box in resolvers.values {
            if let resolver = box.takeUnretainedValue().resolver { avahi_service_resolver_free(resolver) }
            box.release()
        }
        resolvers.removeAll()
        if let browser { avahi_service_browser_free(browser) }
        browser = nil
    }
}
#endif
