import BridgeTLS

/// One probe of one address: what came back and how long it took.
public struct ProbeAttempt: Sendable, Hashable, Codable {
    /// The address tried: `192.168.1.20`, `fd00::2`, `fe80::2%eth0`, or a host name.
    public var address: String
    /// The WebSocket URL tried.
    public var url: String
    /// How it ended.
    public var outcome: ProbeOutcome
    /// Milliseconds from starting the connection to the answer (or the failure).
    public var ms: Double
    /// What went wrong, in words, when the outcome is not `answered`.
    public var error: String?
    /// The protocol version the bridge answered `initialize` with.
    public var protocolVersion: String?
    /// The agent's `agent_info` (`name`, `title`, `version`).
    public var agent: [String: String]?
    /// For `wss://`: the pin of the certificate the bridge presented, to compare with `oa-bridge pair` on the desktop.
    public var pin: String?

    /// The bridge answered `tls_required` (so a `wss://` attempt is worth making); not encoded.
    var wantsTLS = false

    /// Creates an attempt.
    public init(
        address: String, url: String, outcome: ProbeOutcome, ms: Double, error: String? = nil,
        protocolVersion: String? = nil, agent: [String: String]? = nil, pin: String? = nil
    ) {
        self.address = address
        self.url = url
        self.outcome = outcome
        self.ms = ms
        self.error = error
        self.protocolVersion = protocolVersion
        self.agent = agent
        self.pin = pin
    }

    enum CodingKeys: String, CodingKey {
        case address, url, outcome, ms, error
        case protocolVersion = "protocol_version"
        case agent, pin
    }
}
