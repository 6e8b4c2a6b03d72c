#if canImport(CAvahi)
import CAvahi
import Foundation
import Logging
import Synchronization

/// Lists the service types announced on the network with `avahi_service_type_browser` (the
/// `_services._dns-sd._udp` meta-query), as `avahi-browse --all` does.
///
/// State lives on the Avahi event-loop thread or under its lock (see `AvahiConnection`).
final class AvahiTypeBrowser: AvahiConnectionDelegate, @unchecked Sendable {
    private let connection: AvahiConnection
    private let domain: String?
    private let interface: AvahiIfIndex
    private let continuation: AsyncStream<ServiceTypeEvent>.Continuation
    private var unmanagedSelf: Unmanaged<AvahiTypeBrowser>?
    private let cancelClaimed = Atomic<Bool>(false)
    private var browser: OpaquePointer?
    /// Sightings per (type, interface): Avahi reports one per IP protocol.
    private var counts: [ServiceTypeSighting: Int] = [:]
    private var lost = false

    init(domain: String?, interface: AvahiIfIndex, connection: AvahiConnection, continuation: AsyncStream<ServiceTypeEvent>.Continuation) {
        self.domain = domain
        self.interface = interface
        self.connection = connection
        self.continuation = continuation
    }

    func start() throws(DiscoveryError) {
        unmanagedSelf = Unmanaged.passRetained(self)
        connection.delegate = self
        try connection.start()
    }

    /// Frees the browser and ends the stream.
    ///
    /// Idempotent.
    func cancel() {
        guard cancelClaimed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        connection.stop {
            if let browser = self.browser { avahi_service_type_browser_free(browser) }
            self.browser = nil
        }
        continuation.finish()
        unmanagedSelf?.release()
        unmanagedSelf = nil
    }

    func avahiClientRunning(_ client: OpaquePointer) {
        guard browser == nil else { return }
        lost = false
        counts.removeAll()
        let userdata = unmanagedSelf.map { UnsafeMutableRawPointer($0.toOpaque()) }
        browser = avahi_service_type_browser_new(
            client, interface, AvahiConstants.anyProtocol, domain, AvahiLookupFlags(rawValue: 0),
            { typeBrowser, interface, _, event, type, domain, _, userdata in
                guard let userdata, let typeBrowser, let client = avahi_service_type_browser_get_client(typeBrowser) else { return }
                let browser = Unmanaged<AvahiTypeBrowser>.fromOpaque(userdata).takeUnretainedValue()
                browser.event(interface: interface, event: event, type: AvahiStrings.string(type),
                              domain: AvahiStrings.string(domain), client: client)
            }, userdata)
        if browser == nil {
            let error = avahi_client_errno(client)
            continuation.yield(.failure(.backendFailure(operation: "browsing service types", message: AvahiConnection.describe(error: error))))
        }
    }

    func avahiClientRegistering(_ client: OpaquePointer) {}

    func avahiClientLost(reason: String) {
        browser = nil
        counts.removeAll()
        if !lost {
            lost = true
            continuation.yield(.daemonUnavailable(reason: reason))
        }
    }

    private func event(interface: AvahiIfIndex, event: AvahiBrowserEvent, type: String, domain: String, client: OpaquePointer) {
        let sighting = ServiceTypeSighting(type: type, domain: domain, interface: AvahiStrings.interfaceName(interface))
        switch event {
        case AVAHI_BROWSER_NEW:
            counts[sighting, default: 0] += 1
            if counts[sighting] == 1 { continuation.yield(.added(sighting)) }
        case AVAHI_BROWSER_REMOVE:
            guard let count = counts[sighting] else { return }
            if count <= 1 {
                counts.removeValue(forKey: sighting)
                continuation.yield(.removed(sighting))
            } else {
                counts[sighting] = count - 1
            }
        case AVAHI_BROWSER_ALL_FOR_NOW:
            continuation.yield(.allForNow)
        case AVAHI_BROWSER_FAILURE:
            let error = avahi_client_errno(client)
            continuation.yield(.failure(.backendFailure(operation: "browsing service types", message: AvahiConnection.describe(error: error))))
        default:
            break
        }
    }
}

/// Resolves one host name with `avahi_host_name_resolver`, once per address family (as
/// `avahi-resolve --name` does for the family asked), and reports each address found.
final class AvahiHostResolver: AvahiConnectionDelegate, @unchecked Sendable {
    private let connection: AvahiConnection
    private let hostName: String
    private let interface: AvahiIfIndex
    private let continuation: AsyncStream<HostLookupEvent>.Continuation
    private var unmanagedSelf: Unmanaged<AvahiHostResolver>?
    private let cancelClaimed = Atomic<Bool>(false)
    private var resolvers: [OpaquePointer] = []

    init(hostName: String, interface: AvahiIfIndex, connection: AvahiConnection, continuation: AsyncStream<HostLookupEvent>.Continuation) {
        self.hostName = hostName
        self.interface = interface
        self.connection = connection
        self.continuation = continuation
    }

    func start() throws(DiscoveryError) {
        unmanagedSelf = Unmanaged.passRetained(self)
        connection.delegate = self
        try connection.start()
    }

    /// Frees the resolvers and ends the stream.
    ///
    /// Idempotent.
    func cancel() {
        guard cancelClaimed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        connection.stop {
            for resolver in self.resolvers { avahi_host_name_resolver_free(resolver) }
            self.resolvers.removeAll()
        }
        continuation.finish()
        unmanagedSelf?.release()
        unmanagedSelf = nil
    }

    func avahiClientRunning(_ client: OpaquePointer) {
        guard resolvers.isEmpty else { return }
        let userdata = unmanagedSelf.map { UnsafeMutableRawPointer($0.toOpaque()) }
        for family in [AvahiProtocol(AVAHI_PROTO_INET), AvahiProtocol(AVAHI_PROTO_INET6)] {
            let resolver = avahi_host_name_resolver_new(
                client, interface, AvahiConstants.anyProtocol, hostName, family, AvahiLookupFlags(rawValue: 0),
                { _, interface, _, event, _, address, _, userdata in
                    guard let userdata else { return }
                    let resolver = Unmanaged<AvahiHostResolver>.fromOpaque(userdata).takeUnretainedValue()
                    resolver.event(interface: interface, event: event, address: address)
                }, userdata)
            if let resolver { resolvers.append(resolver) } else { continuation.yield(.familyDone) }
        }
    }

    func avahiClientRegistering(_ client: OpaquePointer) {}

    func avahiClientLost(reason: String) {
        resolvers.removeAll()  // gone with the client
        continuation.yield(.daemonUnavailable(reason))
    }

    private func event(interface: AvahiIfIndex, event: AvahiResolverEvent, address: UnsafePointer<AvahiAddress>?) {
        switch event {
        case AVAHI_RESOLVER_FOUND:
            if let address, let found = AvahiStrings.address(address, interface: interface) {
                continuation.yield(.address(found))
            }
        default:
            continuation.yield(.familyDone)
        }
    }
}
#endif
