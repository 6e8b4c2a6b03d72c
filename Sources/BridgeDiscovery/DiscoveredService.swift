/// The identity of one service instance on the network: name, type and domain (RFC 6763 §4.1).
public struct ServiceInstance: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The instance name, for example `Desk`; may hold spaces and any UTF-8.
    public var name: String
    /// The service type, for example `_openagents._tcp`.
    public var type: String
    /// The domain, normally `local`.
    public var domain: String

    /// Creates an instance identity.
    public init(name: String, type: String, domain: String = "local") {
        self.name = name
        self.type = type
        self.domain = ServiceInstance.normalizedDomain(domain)
    }

    /// `local.` and `local` name the same domain; keep one spelling.
    static func normalizedDomain(_ domain: String) -> String {
        var text = domain
        while text.hasSuffix(".") { text.removeLast() }
        return text.isEmpty ? "local" : text
    }

    /// The service's full DNS-SD name, `instance.type.domain`.
    public var description: String { "\(name).\(type).\(domain)" }
}

/// One IP address at which a service answers.
public struct ServiceAddress: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The address family.
    public enum Family: String, Sendable, Hashable, Codable {
        case ipv4
        case ipv6
    }

    /// The address in its textual form, without any zone (for example `fe80::1`, `198.18.0.2`).
    public var ip: String
    /// IPv4 or IPv6.
    public var family: Family
    /// For link-local IPv6 addresses, the interface the address is valid on (for example `eth0`).
    public var zone: String?

    /// Creates an address.
    public init(ip: String, family: Family, zone: String? = nil) {
        self.ip = ip
        self.family = family
        self.zone = zone
    }

    /// Whether this is an IPv6 link-local address (fe80::/10), which needs its zone to be used.
    public var isLinkLocal: Bool {
        guard family == .ipv6 else { return false }
        let lower = ip.lowercased()
        return ["fe8", "fe9", "fea", "feb"].contains { lower.hasPrefix($0) }
    }

    /// The host part of a URL: IPv4 as is, IPv6 bracketed, with `%25zone` for link-local (RFC 6874).
    public var urlHost: String {
        switch family {
        case .ipv4:
            return ip
        case .ipv6:
            if let zone, isLinkLocal { return "[\(ip)%25\(zone)]" }
            return "[\(ip)]"
        }
    }

    /// The address as a URL host takes it: a link-local IPv6 address with its zone (`fe80::1%eth0`).
    public var description: String {
        if let zone, isLinkLocal { return "\(ip)%\(zone)" }
        return ip
    }
}

/// A service instance resolved to where it can be reached.
public struct ResolvedService: Sendable, Hashable, Codable {
    /// Name, type and domain.
    public var instance: ServiceInstance
    /// The target host name, for example `desk.local`.
    public var hostName: String
    /// The TCP or UDP port.
    public var port: UInt16
    /// Every address seen for the host, IPv4 first.
    public var addresses: [ServiceAddress]
    /// The TXT record as key/value pairs; a key present without `=` maps to an empty string.
    public var txt: [String: String]
    /// Names of the interfaces the service was seen on, for example `["eth0"]`.
    public var interfaces: [String]
    /// Whether the service is published by this very machine (Avahi's "local" flag).
    public var isLocal: Bool
    /// Whether the service is published by this very process or daemon client ("our own").
    public var isOwn: Bool
    /// Seconds from the moment the browser first saw the instance to its first resolution.
    public var resolveSeconds: Double?

    /// Creates a resolved service.
    public init(
        instance: ServiceInstance,
        hostName: String,
        port: UInt16,
        addresses: [ServiceAddress],
        txt: [String: String],
        interfaces: [String],
        isLocal: Bool = false,
        isOwn: Bool = false,
        resolveSeconds: Double? = nil
    ) {
        self.instance = instance
        self.hostName = hostName
        self.port = port
        self.addresses = addresses
        self.txt = txt
        self.interfaces = interfaces
        self.isLocal = isLocal
        self.isOwn = isOwn
        self.resolveSeconds = resolveSeconds
    }
}
