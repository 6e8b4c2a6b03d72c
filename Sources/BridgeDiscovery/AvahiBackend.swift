#if canImport(CAvahi)
import Logging

/// The native Avahi backend (libavahi-client over D-Bus), the default on Linux.
///
/// Every advertisement and browse runs its own `AvahiThreadedPoll` and client, connects with
/// `AVAHI_CLIENT_NO_FAIL`, and reconnects by itself when avahi-daemon or D-Bus restarts.
public struct AvahiBackend: DiscoveryBackend {
    /// `avahi`.
    public var name: String { "avahi" }
    private let logger: Logger

    /// Creates the backend; `logger` receives daemon and registration events.
    public init(logger: Logger = Logger(label: "oa-bridge.discovery.avahi")) {
        self.logger = logger
    }

    public func advertise(_ registration: ServiceRegistration) -> Advertisement {
        let (events, continuation) = AsyncStream.makeStream(of: AdvertiseEvent.self, bufferingPolicy: .bufferingNewest(64))
        do {
            let connection = try AvahiConnection(logger: logger)
            let advertiser = AvahiAdvertiser(registration: registration, connection: connection, continuation: continuation, logger: logger)
            try advertiser.start()
            return Advertisement(events: events, updateTXT: { advertiser.updateTXT($0) }, cancel: { advertiser.cancel() })
        } catch {
            continuation.yield(.failure(error))
            continuation.finish()
            return Advertisement(events: events, updateTXT: { _ in }, cancel: {})
        }
    }

    public func browse(_ type: ServiceType, domain: String?) -> AsyncStream<BrowseEvent> {
        let (events, continuation) = AsyncStream.makeStream(of: BrowseEvent.self, bufferingPolicy: .bufferingNewest(1024))
        do {
            let connection = try AvahiConnection(logger: logger)
            let browser = AvahiBrowser(type: type, domain: domain, connection: connection, continuation: continuation, logger: logger)
            continuation.onTermination = { _ in browser.cancel() }
            try browser.start()
        } catch {
            continuation.yield(.failure(error))
            continuation.finish()
        }
        return events
    }
}
#endif
