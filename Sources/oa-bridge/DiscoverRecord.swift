import BridgeClient
import BridgeDiscovery

/// One line of `discover --json`.
struct DiscoverRecord: Encodable {
    /// An address as printed in JSON.
    struct Address: Encodable {
        var ip: String
        var family: String
        var zone: String?

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(ip, forKey: .ip)
            try container.encode(family, forKey: .family)
            try container.encode(zone, forKey: .zone)  // explicit null, not omitted
        }

        private enum CodingKeys: String, CodingKey { case ip, family, zone }
    }

    /// The probe outcome as printed in JSON.
    struct Probe: Encodable {
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
    }

    var event: String
    /// Seconds since `discover` started.
    var t: Double
    var name: String?
    var type: String?
    var domain: String?
    var host: String?
    var port: UInt16?
    var addresses: [Address]?
    var txt: [String: String]?
    var interfaces: [String]?
    var local: Bool?
    var own: Bool?
    var resolveMilliseconds: Double?
    var probe: Probe?
    var message: String?

    enum CodingKeys: String, CodingKey {
        case event, t, name, type, domain, host, port, addresses, txt, interfaces, local, own, probe, message
        case resolveMilliseconds = "resolve_ms"
    }

    init(event: String, seconds: Double, message: String? = nil) {
        self.event = event
        self.t = seconds
        self.message = message
    }

    init(event: String, seconds: Double, instance: ServiceInstance) {
        self.init(event: event, seconds: seconds)
        name = instance.name
        type = instance.type
        domain = instance.domain
    }

    init(event: String, seconds: Double, service: ResolvedService, probe result: HandshakeProbe.Result?) {
        self.init(event: event, seconds: seconds, instance: service.instance)
        host = service.hostName
        port = service.port
        addresses = service.addresses.map { Address(ip: $0.ip, family: $0.family.rawValue, zone: $0.zone) }
        txt = service.txt
        interfaces = service.interfaces
        local = service.isLocal
        own = service.isOwn
        resolveMilliseconds = service.resolveSeconds.map { ($0 * 1_000_000).rounded() / 1_000 }
        probe = result.map {
            Probe(ok: $0.ok, ms: ($0.milliseconds * 1_000).rounded() / 1_000, url: $0.url, agent: $0.agent,
                  protocolVersion: $0.protocolVersion, error: $0.error, outcome: $0.outcome, probes: $0.probes)
        }
    }
}
