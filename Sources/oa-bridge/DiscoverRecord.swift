import BridgeClient
import BridgeDiscovery

/// One line of `discover --json`: the library's record with the handshake result under `probe`.
typealias DiscoverRecord = DiscoveryRecord<DiscoverProbeJSON>

/// The probe outcome as printed in JSON.
struct DiscoverProbeJSON: Encodable, Sendable {
    var ok: Bool
    var ms: Double
    var url: String
    var agent: [String: String]?
    var protocolVersion: String?
    var error: String?
    /// The best outcome of the service's addresses (`answered`, `needs_pairing`, `refused`, …).
    var outcome: ProbeOutcome?
    /// Every address tried: `address`, `url`, `outcome`, `ms`, `error`.
    var probes: [ProbeAttempt]?

    enum CodingKeys: String, CodingKey {
        case ok, ms, url, agent, error, outcome, probes
        case protocolVersion = "protocol_version"
    }

    init(_ result: HandshakeProbe.Result) {
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
