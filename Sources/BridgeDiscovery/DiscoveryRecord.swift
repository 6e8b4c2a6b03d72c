/// One line of `oa-bridge discover --json`: an event with what it is about.
///
/// `Probe` is the caller's handshake result (the library does not probe), encoded under `probe`.
public struct DiscoveryRecord<Probe: Encodable & Sendable>: Encodable, Sendable {
    /// An address as printed in JSON: `{"ip","family","zone"}`, zone an explicit null when absent.
    public struct Address: Encodable, Sendable {
        /// The address without zone.
        public var ip: String
        /// `ipv4` or `ipv6`.
        public var family: String
        /// The interface of a link-local IPv6 address.
        public var zone: String?

        /// The JSON form of `address`.
        public init(_ address: ServiceAddress) {
            ip = address.ip
            family = address.family.rawValue
            zone = address.zone
        }

        /// Encodes the address with an explicit null zone.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(ip, forKey: .ip)
            try container.encode(family, forKey: .family)
            try container.encode(zone, forKey: .zone)  // explicit null, not omitted
        }

        private enum CodingKeys: String, CodingKey { case ip, family, zone }
    }

    /// `added`, `updated`, `removed`, `conflict`, `type_added`, `resolved`, `all_for_now`, `error`, ….
    public var event: String
    /// Seconds since `discover` started.
    public var t: Double
    /// The instance name.
    public var name: String?
    /// The service type.
    public var type: String?
    /// The domain.
    public var domain: String?
    /// For `type_added` / `type_removed`: the interface the type was seen on.
    public var interface: String?
    /// The target host (or, for `resolved`, the host name asked for).
    public var host: String?
    /// The port.
    public var port: UInt16?
    /// The addresses, IPv4 first.
    public var addresses: [Address]?
    /// The TXT record.
    public var txt: [String: String]?
    /// For `updated`: the TXT keys added, removed and changed.
    public var txtDiff: TXTDiff?
    /// For `updated`: every change, one line each (`~ v: 1 -> 2`, `+ address …`).
    public var changes: [String]?
    /// The interfaces the service was seen on.
    public var interfaces: [String]?
    /// Published by this machine.
    public var local: Bool?
    /// Published by this process.
    public var own: Bool?
    /// Milliseconds from first sighting to resolution (or, for `resolved`, to the first answer).
    public var resolveMilliseconds: Double?
    /// The caller's handshake result.
    public var probe: Probe?
    /// A message: the reason, the error, or a conflict's explanation.
    public var message: String?
    /// For `conflict`: its kind (``DiscoveryConflict/kind``).
    public var kind: String?
    /// For `conflict`: the instance names involved.
    public var names: [String]?
    /// For `conflict`: what to do.
    public var fix: String?

    enum CodingKeys: String, CodingKey {
        case event, t, name, type, domain, interface, host, port, addresses, txt, changes, interfaces, local, own, probe, message
        case kind, names, fix
        case txtDiff = "txt_diff"
        case resolveMilliseconds = "resolve_ms"
    }

    /// An event with an optional message.
    public init(event: String, seconds: Double, message: String? = nil) {
        self.event = event
        self.t = seconds
        self.message = message
    }

    /// An event about an instance (`removed`).
    public init(event: String, seconds: Double, instance: ServiceInstance) {
        self.init(event: event, seconds: seconds)
        name = instance.name
        type = instance.type
        domain = instance.domain
    }

    /// An event about a resolved service (`added`, `updated` with its `diff`), with the caller's probe result.
    public init(event: String, seconds: Double, service: ResolvedService, probe: Probe?, diff: ServiceDiff? = nil) {
        self.init(event: event, seconds: seconds, instance: service.instance)
        host = service.hostName
        port = service.port
        addresses = service.addresses.map(Address.init)
        txt = service.txt
        interfaces = service.interfaces
        local = service.isLocal
        own = service.isOwn
        resolveMilliseconds = service.resolveSeconds.map { ($0 * 1_000_000).rounded() / 1_000 }
        self.probe = probe
        if let diff {
            txtDiff = diff.txt
            changes = diff.lines
        }
    }

    /// A `conflict` with its explanation and fix.
    public init(seconds: Double, conflict: DiscoveryConflict) {
        self.init(event: "conflict", seconds: seconds, message: conflict.explanation)
        kind = conflict.kind
        names = conflict.names
        fix = conflict.fix
    }

    /// A `type_added` / `type_removed` of `--all`.
    public init(event: String, seconds: Double, sighting: ServiceTypeSighting) {
        self.init(event: event, seconds: seconds)
        type = sighting.type
        domain = sighting.domain
        interface = sighting.interface
    }

    /// The `resolved` answer of `--resolve`.
    public init(seconds: Double, resolution: HostResolution) {
        self.init(event: "resolved", seconds: seconds)
        host = resolution.hostName
        addresses = resolution.addresses.map(Address.init)
        resolveMilliseconds = (resolution.seconds * 1_000_000).rounded() / 1_000
    }
}
