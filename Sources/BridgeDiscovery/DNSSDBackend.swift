import CDNSSD
import Logging

/// The dns_sd backend: `DNSServiceRegister` / `Browse` / `Resolve` / `QueryRecord`, driven by the
/// refs' socket fds. On Linux it runs over Avahi's compatibility library (libdns_sd, which talks to
/// avahi-daemon over D-Bus); on macOS over the system's mDNSResponder.
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

    /// Creates the backend; `logger` receives daemon and registration events.
    public init(logger: Logger = Logger(label: "oa-bridge.discovery.dnssd")) {
        self.logger = logger
        DNSSDEnvironment.prepare()
    }

    public func advertise(_ registration: ServiceRegistration) -> Advertisement {
        let (events, continuation) = AsyncStream.makeStream(of: AdvertiseEvent.self, bufferingPolicy: .bufferingNewest(64))
        let loop = DNSSDRunLoop(label: "oa-dnssd-advertise")
        do {
            try loop.start()
        } catch {
            continuation.yield(.failure(error))
            continuation.finish()
            return Advertisement(events: events, updateTXT: { _ in }, cancel: {})
        }
        let advertiser = DNSSDAdvertiser(registration: registration, loop: loop, continuation: continuation, logger: logger)
        advertiser.start()
        return Advertisement(events: events, updateTXT: { advertiser.updateTXT($0) }, cancel: { advertiser.cancel() }, withdraw: { await advertiser.withdraw() })
    }

    public func browse(_ type: ServiceType, domain: String?) -> AsyncStream<BrowseEvent> {
        let (events, continuation) = AsyncStream.makeStream(of: BrowseEvent.self, bufferingPolicy: .bufferingNewest(1024))
        let loop = DNSSDRunLoop(label: "oa-dnssd-browse")
        do {
            try loop.start()
        } catch {
            continuation.yield(.failure(error))
            continuation.finish()
            return events
        }
        let browser = DNSSDBrowser(type: type, domain: domain, loop: loop, continuation: continuation, logger: logger)
        continuation.onTermination = { _ in browser.cancel() }
        browser.start()
        return events
    }
}
