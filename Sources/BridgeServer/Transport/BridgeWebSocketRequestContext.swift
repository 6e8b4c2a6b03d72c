public import BridgeHTTP
public import Hummingbird
public import NIOCore

/// The WebSocket router's context with the peer's address, so the upgrade check can rate-limit per address:
/// `Router(context: BridgeWebSocketRequestContext.self)` and pass `context.remoteAddress?.ipAddress` on.
public struct BridgeWebSocketRequestContext: RequestContext, TransportAwareRequestContext {
    /// Hummingbird's per-request storage.
    public var coreContext: CoreRequestContextStorage
    /// The peer's address, if the channel has one.
    public let remoteAddress: SocketAddress?
    /// What the upgrade check decided (the authenticated device), for the connection.
    let upgradeOutcome = UpgradeOutcome()
    /// The connection's channel, where a refusal is recorded (``UpgradeRefusals``).
    let channelID: ObjectIdentifier
    /// Whether the connection came in over TLS.
    public let isTLS: Bool

    /// Creates the context for a request arriving on `source.channel`.
    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
        self.channelID = ObjectIdentifier(source.channel)
        self.isTLS = source.isTLS
    }
}
