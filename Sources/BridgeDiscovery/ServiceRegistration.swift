/// What to advertise: a named service of a type on a port, with TXT metadata.
public struct ServiceRegistration: Sendable, Hashable {
    /// The instance name users see, for example `Desk`; at most 63 bytes of UTF-8.
    public var name: String
    /// The service type.
    public var type: ServiceType
    /// The domain, `nil` for the default (`local`).
    public var domain: String?
    /// The port the service listens on.
    public var port: UInt16
    /// The TXT record.
    public var txt: TXTRecord
    /// The interface to announce on (`eth0`), or `nil` for every interface the daemon uses.
    ///
    /// Users with docker0, VPN or virtual bridges pick the LAN's interface so phones are not told unreachable
    /// addresses.
    public var interface: String?

    /// Creates a registration, validating the name.
    public init(
        name: String, type: ServiceType = .openAgents, domain: String? = nil, port: UInt16, txt: TXTRecord = TXTRecord(),
        interface: String? = nil
    ) throws(DiscoveryError) {
        guard !name.isEmpty, name.utf8.count <= 63 else { throw .invalidServiceName(name) }
        self.name = name
        self.type = type
        self.domain = domain
        self.port = port
        self.txt = txt
        self.interface = interface
    }
}
