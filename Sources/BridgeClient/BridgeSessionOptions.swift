public import BridgeTLS
/// How a ``BridgeClientSession`` connects and stays connected.
public struct BridgeSessionOptions: Sendable {
    /// The `clientInfo.name` sent in `initialize`.
    public var clientName: String
    /// How long one WebSocket upgrade may take.
    public var connectTimeout: Duration
    /// How long the bridge may take to answer `initialize`.
    public var initializeTimeout: Duration
    /// Seconds between WebSocket pings (a link that stops answering is detected within twice that); `nil` sends none.
    public var pingInterval: Duration?
    /// How long the race waits before starting the next candidate (Happy Eyeballs).
    public var attemptDelay: Duration
    /// When to reconnect after a lost connection, and when to give up.
    public var reconnectPolicy: ReconnectPolicy
    /// The bridge's certificate pin (from the QR code, `--pin`, or stored at pairing).
    ///
    /// When set, every candidate is reached over `wss://` and a certificate with another key is refused; `nil`
    /// connects as each URL says.
    public var pin: CertificatePin?

    /// Options with the defaults `oa-bridge connect` uses: 3 s per upgrade, 5 s for `initialize`, a ping every 5 s,
    /// 250 ms between attempts, up to 10 reconnect attempts at most 10 s apart (about a minute at worst, then a clear
    /// error instead of waiting for ever).
    public init(
        clientName: String = "oa-bridge-connect", connectTimeout: Duration = .seconds(3), initializeTimeout: Duration = .seconds(5),
        pingInterval: Duration? = .seconds(5), attemptDelay: Duration = .milliseconds(250),
        reconnectPolicy: ReconnectPolicy = ReconnectPolicy(maximumDelay: .seconds(10), maximumAttempts: 10), pin: CertificatePin? = nil
    ) {
        self.clientName = clientName
        self.connectTimeout = connectTimeout
        self.initializeTimeout = initializeTimeout
        self.pingInterval = pingInterval
        self.attemptDelay = attemptDelay
        self.reconnectPolicy = reconnectPolicy
        self.pin = pin
    }
}
