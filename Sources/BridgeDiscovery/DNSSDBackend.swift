import CDNSSD
public import Logging

/// The dns_sd backend: `DNSServiceRegister` / `Browse` / `Resolve` / `QueryRecord`, driven by the
/// refs' socket fds.
///
/// On Linux it runs over Avahi's compatibility library (libdns_sd, which talks to avahi-daemon over
/// D-Bus); on macOS over the system's mDNSResponder.
///
/// Every advertisement and every browse gets its own thread (`DNSSDRunLoop`) that owns all its
/// refs; callers see only Swift values and `AsyncStream`s. Addresses come from `DNSServiceQueryRecord`
/// (A and AAAA on the resolved host name, per interface), which Avahi's layer supports;
/// `DNSServiceGetAddrInfo` is not used because Avahi's layer lacks it.
///
/// Limits on Linux (Avahi's compatibility layer):
/// - no "all for now" signal: `allForNow` is synthesised a second after browsing starts, once every
///   instance seen so far is resolved (at the latest after four seconds);
/// - no "local"/"own" result flags: `isLocal` compares the host name with this machine's,
///   `isOwn` also checks the services this process registered through this backend;
/// - each instance and address is reported once per IP protocol (adds and removes are counted);
/// - a name already held by another client of the same daemon fails instead of being renamed,
///   so this backend renames (`Desk #2`) itself; names taken on other hosts are renamed by Avahi;
/// - every ref is its own D-Bus connection and thread inside the library (a browse uses one ref,
///   plus three per instance and interface: resolve, A, AAAA).
public struct DNSSDBackend: DiscoveryBackend {
    /// `dnssd`.
    public var name: String { "dnssd" }
    private let logger: Logger
    /// The interface used when a registration or browse names none (`serve --interface`); `nil` for every one.
    private let defaultInterface: String?

    /// Creates the backend; `logger` receives daemon and registration events.
    ///
    /// `interface` (for example `eth0`) restricts every advertisement and browse that names no interface of its own.
    public init(logger: Logger = Logger(label: "oa-bridge.discovery.dnssd"), interface: String? = nil) {
        self.logger = logger
        self.defaultInterface = interface
        DNSSDEnvironment.prepare()
    }

    /// Publishes `registration` through the dns_sd API (`DNSServiceRegister`) until the advertisement is cancelled.
    public func advertise(_ registration: ServiceRegistration) -> Advertisement {
        var registration = registration
        if registration.interface == nil { registration.interface = defaultInterface }
        let (events, continuation) = AsyncStream.makeStream(of: AdvertiseEvent.self, bufferingPolicy: .bufferingNewest(64))
        let loop = DNSSDRunLoop(label: "oa-dnssd-advertise")
        do {
            _ = try NetworkInterfaceName.index(of: registration.interface)
            try loop.start()
        } catch {
            continuation.yield(.failure(error))
            continuation.finish()
            return Advertisement(events: events, updateTXT: { _ in }, cancel: {})
        }
        let advertiser = DNSSDAdvertiser(registration: registration, loop: loop, continuation: continuation, logger: logger)
        advertiser.start()
        return Advertisement(
            events: events, updateTXT: { advertiser.updateTXT($0) }, cancel: { advertiser.cancel() },
            withdraw: { await advertiser.withdraw() })
    }

    /// Browses for services of `type` through the dns_sd API and resolves each one found, until the consumer stops reading.
    public func browse(_ type: ServiceType, domain: String?, interface: String?) -> AsyncStream<BrowseEvent> {
        let interface = interface ?? defaultInterface
        let (events, continuation) = AsyncStream.makeStream(of: BrowseEvent.self, bufferingPolicy: .bufferingNewest(1024))
        let loop = DNSSDRunLoop(label: "oa-dnssd-browse")
        let index: UInt32
        do {
            index = try NetworkInterfaceName.index(of: interface) ?? DNSSDConstants.interfaceAny
            try loop.start()
        } catch {
            continuation.yield(.failure(error))
            continuation.finish()
            return events
        }
        let browser = DNSSDBrowser(type: type, domain: domain, interface: index, loop: loop, continuation: continuation, logger: logger)
        continuation.onTermination = { _ in browser.cancel() }
        browser.start()
        return events
    }

    /// Lists the service types announced on the network (DNS-SD's `_services._dns-sd._udp` meta-query) through the dns_sd API.
    public func browseServiceTypes(domain: String?, interface: String?) -> AsyncStream<ServiceTypeEvent> {
        let interface = interface ?? defaultInterface
        let (events, continuation) = AsyncStream.makeStream(of: ServiceTypeEvent.self, bufferingPolicy: .bufferingNewest(1024))
        let loop = DNSSDRunLoop(label: "oa-dnssd-types")
        let index: UInt32
        do {
            index = try NetworkInterfaceName.index(of: interface) ?? DNSSDConstants.interfaceAny
            try loop.start()
        } catch {
            continuation.yield(.failure(error))
            continuation.finish()
            return events
        }
        let browser = DNSSDTypeBrowser(domain: domain, interface: index, loop: loop, continuation: continuation)
        continuation.onTermination = { _ in browser.cancel() }
        browser.start()
        return events
    }

    /// Looks up the addresses of an mDNS host name through the dns_sd API (`DNSServiceQueryRecord`, A and AAAA).
    /// - Throws: ``DiscoveryError/hostNotFound(name:seconds:)`` when nothing answered within `timeout`.
    public func resolveHost(_ hostName: String, interface: String?, timeout: Duration) async throws(DiscoveryError) -> HostResolution {
        let interface = interface ?? defaultInterface
        let name = HostResolution.mdnsName(hostName)
        let index = try NetworkInterfaceName.index(of: interface) ?? DNSSDConstants.interfaceAny
        let loop = DNSSDRunLoop(label: "oa-dnssd-resolve")
        try loop.start()
        let (events, continuation) = AsyncStream.makeStream(of: HostLookupEvent.self, bufferingPolicy: .bufferingNewest(64))
        let resolver = DNSSDHostResolver(hostName: name, interface: index, loop: loop, continuation: continuation)
        resolver.start()
        defer { resolver.cancel() }
        return try await HostLookup.collect(events, hostName: name, timeout: timeout)
    }
}
