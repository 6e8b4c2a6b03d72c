import CDNSSD
import Logging

/// The dns_sd backend: `DNSServiceRegister` / `Browse` / `Resolve` / `QueryRecord`, driven by the
/// refs' socket fds. On Linux it runs over Avahi's compatibility library (libdns_sd, which talks to
/// avahi-daemon over D-Bus); on macOS over the system's mDNSResponder.
///
/// Every advertisement and every browse gets its own thread (`DNSSDRunLoop`) that owns all its
/// refs; callers see only Swift values and `AsyncStream`s.
///
/// Limits on Linux (Avahi's compatibility layer): no "all for now" signal (it is synthesised a
/// second after browsing starts), no "local"/"own" result flags (`isLocal` compares the host name
/// with this machine's, `isOwn` also checks the services this process registered), and each
/// instance and address is reported once per IP protocol.
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
        return Advertisement(events: events, updateTXT: { advertiser.updateTXT($0) }, cancel: { advertiser.cancel() })
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
