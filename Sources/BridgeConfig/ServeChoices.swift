/// `--auth`: whether phones need a token.
public enum AuthMode: String, CaseIterable, Sendable {
    /// Phones pair with the QR code and present a token.
    case token
    /// No token: loopback (and `--allow-network`) only.
    case none
}

/// `--discovery`: which mDNS implementation advertises the bridge, or none.
public enum DiscoveryChoice: String, CaseIterable, Sendable {
    /// libavahi-client over D-Bus (the default on Linux).
    case avahi
    /// The dns_sd API (Avahi's compatibility library on Linux, the system's own on macOS).
    case dnssd
    /// No advertising: phones connect by address.
    case off

    /// The default for this platform: avahi on Linux, dnssd elsewhere.
    public static var platformDefault: DiscoveryChoice {
        #if os(Linux)
        return .avahi
        #else
        return .dnssd
        #endif
    }
}
