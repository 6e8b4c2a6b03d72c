/// One service type seen on the network by the `_services._dns-sd._udp` meta-query (RFC 6763 §9).
public struct ServiceTypeSighting: Sendable, Hashable, Codable {
    /// The type, for example `_openagents._tcp`.
    public var type: String
    /// The domain, normally `local`.
    public var domain: String
    /// The interface it was seen on, for example `eth0` (`nil` if the backend did not say).
    public var interface: String?

    /// Creates a sighting.
    public init(type: String, domain: String = "local", interface: String? = nil) {
        self.type = type
        self.domain = ServiceInstance.normalizedDomain(domain)
        self.interface = interface
    }

    /// A meta-query answer as dns_sd reports it (RFC 6763 §9): the instance name holds the first label of the
    /// type (`_openagents`) and the "type" the protocol and the domain (`_tcp.local.`).
    ///
    /// Returns `nil` for anything that is not of that shape.
    public static func fromMetaQueryReply(name: String, type: String, interface: String?) -> ServiceTypeSighting? {
        var labels = type.split(separator: ".", omittingEmptySubsequences: true).map(String.init)
        guard name.hasPrefix("_"), !name.contains("."), let proto = labels.first, proto == "_tcp" || proto == "_udp" else {
            return nil
        }
        labels.removeFirst()
        let domain = labels.isEmpty ? "local" : labels.joined(separator: ".")
        return ServiceTypeSighting(type: "\(name).\(proto)", domain: domain, interface: interface)
    }
}

/// What a service-type browser reports.
public enum ServiceTypeEvent: Sendable, Hashable {
    /// A type is announced on an interface.
    case added(ServiceTypeSighting)
    /// No service of the type is left on that interface.
    case removed(ServiceTypeSighting)
    /// The daemon has reported what it has cached now; more may come.
    case allForNow
    /// The daemon cannot be reached; the message says why.
    case daemonUnavailable(reason: String)
    /// Something failed; the message says what.
    case failure(DiscoveryError)
}

/// The addresses an mDNS host name resolved to (`avahi-resolve --name desk.local`).
public struct HostResolution: Sendable, Hashable, Codable {
    /// The name asked for, for example `desk.local`.
    public var hostName: String
    /// Every address found, IPv4 first; link-local IPv6 carries its interface as zone.
    public var addresses: [ServiceAddress]
    /// Seconds from the question to the first answer.
    public var seconds: Double

    /// Creates a resolution.
    public init(hostName: String, addresses: [ServiceAddress], seconds: Double) {
        self.hostName = hostName
        self.addresses = addresses
        self.seconds = seconds
    }

    /// `desk` → `desk.local`; a name with a dot is kept as given (without a trailing dot).
    public static func mdnsName(_ name: String) -> String {
        var text = name
        while text.hasSuffix(".") { text.removeLast() }
        return text.contains(".") ? text : "\(text).local"
    }
}
