import BridgeClient
import BridgeDiscovery

/// One line of `discover --json`.
struct DiscoverRecord: Encodable {
    /// An address as printed in JSON.
    struct Address: Encodable {
        var ip: String
        var family: String
        var zone: String?

        init(_ address: ServiceAddress) {
            ip = address.ip
            family = address.family.rawValue
            zone = address.zone
        }

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
    var interface: String?
    var host: String?
    var port: UInt16?
    var addresses: [Address]?
    var txt: [String: String]?
    /// For `updated`: the TXT keys added, removed and changed.
    var txtDiff: TXTDiff?
    /// For `updated`: every change, one line each (`~ v: 1 -> 2`, `+ address …`).
    var changes: [String]?
    var interfaces: [String]?
    var local: Bool?
    var own: Bool?
    var resolveMilliseconds: Double?
    var probe: Probe?
    var message: String?
    /// For `conflict`: its kind, the names involved and the fix.
    var kind: String?
    var names: [String]?
    var fix: String?

    enum CodingKeys: String, CodingKey {
        case event, t, name, type, domain, interface, host, port, addresses, txt, changes, interfaces, local, own, probe, message
        case kind, names, fix
        case txtDiff = "txt_diff"
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

    init(event: String, seconds: Double, service: ResolvedService, probe result: HandshakeProbe.Result?, diff: ServiceDiff? = nil) {
        self.init(event: event, seconds: seconds, instance: service.instance)
        host = service.hostName
        port = service.port
        addresses = service.addresses.map(Address.init)
        txt = service.txt
        interfaces = service.interfaces
        local = service.isLocal
        own = service.isOwn
        resolveMilliseconds = service.resolveSeconds.map { ($0 * 1_000_000).rounded() / 1_000 }
        probe = result.map {
            Probe(ok: $0.ok, ms: ($0.milliseconds * 1_000).rounded() / 1_000, url: $0.url, agent: $0.agent,
                  protocolVersion: $0.protocolVersion, error: $0.error, outcome: $0.outcome, probes: $0.probes)
        }
        if let diff {
            txtDiff = diff.txt
            changes = diff.lines
        }
    }

    init(seconds: Double, conflict: DiscoveryConflict) {
        self.init(event: "conflict", seconds: seconds, message: conflict.explanation)
        kind = conflict.kind
        names = conflict.names
        fix = conflict.fix
    }

    init(event: String, seconds: Double, sighting: ServiceTypeSighting) {
        self.init(event: event, seconds: seconds)
        type = sighting.type
        domain = sighting.domain
        interface = sighting.interface
    }

    init(seconds: Double, resolution: HostResolution) {
        self.init(event: "resolved", seconds: seconds)
        host = resolution.hostName
        addresses = resolution.addresses.map(Address.init)
        resolveMilliseconds = (resolution.seconds * 1_000_000).rounded() / 1_000
    }
}
