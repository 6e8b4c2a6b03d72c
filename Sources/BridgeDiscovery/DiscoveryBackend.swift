/// An mDNS/DNS-SD implementation: Avahi's native client or the dns_sd API.
///
/// Backends hide their C callbacks; callers see only Swift values and `AsyncStream`s.
public protocol DiscoveryBackend: Sendable {
    /// A short name for logs and `--backend`, for example `avahi` or `dnssd`.
    var name: String { get }

    /// Starts advertising `registration` and keeps it advertised (through daemon restarts and
    /// name collisions) until the returned advertisement is cancelled.
    func advertise(_ registration: ServiceRegistration) -> Advertisement

    /// Browses `type` in `domain` (default `local`), resolving every instance, on `interface` only when given
    /// (`eth0`; `nil` for every interface). The stream ends when the consuming task is cancelled or the stream is
    /// dropped; an unknown interface ends it at once with ``DiscoveryError/unknownInterface(_:)``.
    func browse(_ type: ServiceType, domain: String?, interface: String?) -> AsyncStream<BrowseEvent>

    /// Lists every service type announced in `domain` (the `_services._dns-sd._udp` meta-query), on `interface`
    /// only when given. Tells "mDNS works, our service is missing" from "no mDNS at all".
    func browseServiceTypes(domain: String?, interface: String?) -> AsyncStream<ServiceTypeEvent>

    /// Resolves an mDNS host name (`desk.local`) to its addresses, as `avahi-resolve --name` does, waiting at most
    /// `timeout` (and a little longer for the other address family once one has answered).
    func resolveHost(_ hostName: String, interface: String?, timeout: Duration) async throws(DiscoveryError) -> HostResolution
}

extension DiscoveryBackend {
    /// Browses `type` in `domain` on every interface.
    public func browse(_ type: ServiceType, domain: String?) -> AsyncStream<BrowseEvent> {
        browse(type, domain: domain, interface: nil)
    }
}

/// A running advertisement: its events, and the means to update TXT or withdraw it.
public struct Advertisement: Sendable {
    /// Events about the registration: registered, collisions, daemon loss.
    public let events: AsyncStream<AdvertiseEvent>
    private let updateTXTAction: @Sendable (TXTRecord) -> Void
    private let cancelAction: @Sendable () -> Void
    private let withdrawAction: @Sendable () async -> Void

    /// Creates an advertisement handle; backends call this.
    ///
    /// `withdraw` cancels and waits until the goodbye packets are on their way; without it, ``withdraw()``
    /// is ``cancel()``.
    public init(
        events: AsyncStream<AdvertiseEvent>,
        updateTXT: @escaping @Sendable (TXTRecord) -> Void,
        cancel: @escaping @Sendable () -> Void,
        withdraw: (@Sendable () async -> Void)? = nil
    ) {
        self.events = events
        self.updateTXTAction = updateTXT
        self.cancelAction = cancel
        self.withdrawAction = withdraw ?? { cancel() }
    }

    /// Replaces the TXT record of the advertised service.
    public func updateTXT(_ txt: TXTRecord) { updateTXTAction(txt) }

    /// Withdraws the service (sending goodbye packets) and ends `events`, without waiting for the goodbyes.
    public func cancel() { cancelAction() }

    /// Withdraws the service and returns once its goodbye packets are on their way (a bounded wait that blocks no
    /// thread).
    ///
    /// Call it last thing before a process exits, so phones see the service go at once.
    public func withdraw() async { await withdrawAction() }
}
