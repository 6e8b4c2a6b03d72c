#if canImport(CAvahi)
import CAvahi
public import Logging

/// The native Avahi backend (libavahi-client over D-Bus), the default on Linux.
///
/// Every advertisement and browse runs its own `AvahiThreadedPoll` and client, connects with
/// `AVAHI_CLIENT_NO_FAIL`, and reconnects by itself when avahi-daemon or D-Bus restarts.
public struct AvahiBackend: DiscoveryBackend {
    /// `avahi`.
    public var name: String { "avahi" }
    private let logger: Logger
    /// The interface used when a registration or browse names none (`serve --interface`); `nil` for every one.
    private let defaultInterface: String?

    /// Creates the backend; `logger` receives daemon and registration events.
    ///
    /// `interface` (for example `eth0`) restricts every advertisement and browse that names no interface of its own.
    public init(logger: Logger = Logger(label: "oa-bridge.discovery.avahi"), interface: String? = nil) {
        self.logger = logger
        self.defaultInterface = interface
    }

    /// Publishes `registration` through avahi-daemon (on the backend's interface when it names none) until the
    /// advertisement is cancelled; its events say when the name is established, renamed after a collision, or failed.
    public func advertise(_ registration: ServiceRegistration) -> Advertisement {
        var registration = registration
        if registration.interface == nil { registration.interface = defaultInterface }
        let (events, continuation) = AsyncStream.makeStream(of: AdvertiseEvent.self, bufferingPolicy: .bufferingNewest(64))
        do {
            _ = try NetworkInterfaceName.index(of: registration.interface)
            let connection = try AvahiConnection(logger: logger)
            let advertiser = AvahiAdvertiser(registration: registration, connection: connection, continuation: continuation, logger: logger)
            advertiser.start()
            return Advertisement(
                events: events, updateTXT: { advertiser.updateTXT($0) }, cancel: { advertiser.cancel() },
                withdraw: { await advertiser.withdraw() })
        } catch {
            continuation.yield(.failure(error))
            continuation.finish()
            return Advertisement(events: events, updateTXT: { _ in }, cancel: {})
        }
    }

    /// Browses for services of `type` through avahi-daemon and resolves each one found; the stream ends when the
    /// consumer stops reading or the daemon goes away (its last event says why).
    public func browse(_ type: ServiceType, domain: String?, interface: String?) -> AsyncStream<BrowseEvent> {
        let interface = interface ?? defaultInterface
        let (events, continuation) = AsyncStream.makeStream(of: BrowseEvent.self, bufferingPolicy: .bufferingNewest(1024))
        do {
            let index = try AvahiBackend.interfaceIndex(interface)
            let connection = try AvahiConnection(logger: logger)
            let browser = AvahiBrowser(
                type: type, domain: domain, interface: index, connection: connection, continuation: continuation, logger: logger)
            continuation.onTermination = { _ in browser.cancel() }
            try browser.start()
        } catch {
            continuation.yield(.failure(error))
            continuation.finish()
        }
        return events
    }

    /// Lists the service types announced on the network (DNS-SD's `_services._dns-sd._udp` meta-query), as they come and go.
    public func browseServiceTypes(domain: String?, interface: String?) -> AsyncStream<ServiceTypeEvent> {
        let interface = interface ?? defaultInterface
        let (events, continuation) = AsyncStream.makeStream(of: ServiceTypeEvent.self, bufferingPolicy: .bufferingNewest(1024))
        do {
            let index = try AvahiBackend.interfaceIndex(interface)
            let connection = try AvahiConnection(logger: logger)
            let browser = AvahiTypeBrowser(domain: domain, interface: index, connection: connection, continuation: continuation)
            continuation.onTermination = { _ in browser.cancel() }
            try browser.start()
        } catch {
            continuation.yield(.failure(error))
            continuation.finish()
        }
        return events
    }

    /// Looks up the addresses of an mDNS host name (`name.local`) through avahi-daemon.
    /// - Throws: ``DiscoveryError/hostNotFound(name:seconds:)`` when nothing answered within `timeout`.
    public func resolveHost(_ hostName: String, interface: String?, timeout: Duration) async throws(DiscoveryError) -> HostResolution {
        let interface = interface ?? defaultInterface
        let name = HostResolution.mdnsName(hostName)
        let index = try AvahiBackend.interfaceIndex(interface)
        let (events, continuation) = AsyncStream.makeStream(of: HostLookupEvent.self, bufferingPolicy: .bufferingNewest(64))
        let connection = try AvahiConnection(logger: logger)
        let resolver = AvahiHostResolver(hostName: name, interface: index, connection: connection, continuation: continuation)
        try resolver.start()
        defer { resolver.cancel() }
        return try await HostLookup.collect(events, hostName: name, timeout: timeout)
    }

    /// The Avahi index of interface `name`, or every interface.
    static func interfaceIndex(_ name: String?) throws(DiscoveryError) -> AvahiIfIndex {
        guard let index = try NetworkInterfaceName.index(of: name) else { return AvahiConstants.anyInterface }
        return AvahiIfIndex(index)
    }
}
#endif
