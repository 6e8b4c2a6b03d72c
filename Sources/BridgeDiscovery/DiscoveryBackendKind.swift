public import Logging

/// Which mDNS implementation to use: the choice behind `--backend` and the `discovery` setting.
public enum DiscoveryBackendKind: String, CaseIterable, Sendable {
    /// libavahi-client over D-Bus (the default on Linux).
    case avahi
    /// The dns_sd API (Avahi's compatibility library on Linux, the system's own on macOS).
    case dnssd

    /// The default for this platform: avahi on Linux, dnssd elsewhere.
    public static var platformDefault: DiscoveryBackendKind {
        #if os(Linux)
        return .avahi
        #else
        return .dnssd
        #endif
    }

    /// Creates the backend, advertising and browsing on `interface` only when one is named.
    /// - Throws: ``DiscoveryError/backendUnavailable(_:)`` for avahi where libavahi-client is not built in.
    public func make(logger: Logger, interface: String? = nil) throws(DiscoveryError) -> any DiscoveryBackend {
        switch self {
        case .avahi:
            #if canImport(CAvahi)
            return AvahiBackend(logger: logger, interface: interface)
            #else
            throw .backendUnavailable("the avahi backend is not available on this platform; use the dnssd backend")
            #endif
        case .dnssd:
            return DNSSDBackend(logger: logger, interface: interface)
        }
    }
}
