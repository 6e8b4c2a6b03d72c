public import BridgeClient
import BridgeDiscovery

/// The handshake probe's outcome as `discover --json` prints it under `probe`.
public struct DiscoveryProbeJSON: Encodable, Sendable {
    /// Whether some address answered initialize.
    public var ok: Bool
    /// How long the best attempt took, in milliseconds.
    public var ms: Double
    /// The URL of the best attempt.
    public var url: String
    /// The agent's `agentInfo` from the initialize answer.
    public var agent: [String: String]?
    /// The protocol version the bridge answered.
    public var protocolVersion: String?
    /// Why the best attempt failed, if it did.
    public var error: String?
    /// The best outcome of the service's addresses (`answered`, `needs_pairing`, `refused`, …).
    public var outcome: ProbeOutcome?
    /// Every address tried: `address`, `url`, `outcome`, `ms`, `error`.
    public var probes: [ProbeAttempt]?

    enum CodingKeys: String, CodingKey {
        case ok, ms, url, agent, error, outcome, probes
        case protocolVersion = "protocol_version"
    }

    /// The JSON form of a probe result.
    public init(_ result: HandshakeProbe.Result) {
        ok = result.ok
        ms = (result.milliseconds * 1_000).rounded() / 1_000
        url = result.url
        agent = result.agent
        protocolVersion = result.protocolVersion
        error = result.error
        outcome = result.outcome
        probes = result.probes
    }
}
