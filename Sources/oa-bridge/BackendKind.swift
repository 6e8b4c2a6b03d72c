import ArgumentParser
import BridgeDiscovery
import Logging

/// Which mDNS implementation to use, chosen with `--backend`.
enum BackendKind: String, ExpressibleByArgument, CaseIterable, Sendable {
    /// libavahi-client over D-Bus (default on Linux).
    case avahi
    /// The dns_sd API (Avahi's compatibility library on Linux, the system's on macOS).
    case dnssd

    /// The default for this platform.
    static var platformDefault: BackendKind {
        #if os(Linux)
        return .avahi
        #else
        return .dnssd
        #endif
    }

    /// Creates the backend.
    func make(logger: Logger) throws -> any DiscoveryBackend {
        switch self {
        case .avahi:
            #if canImport(CAvahi)
            return AvahiBackend(logger: logger)
            #else
            throw ValidationError("the avahi backend is not available on this platform; use --backend dnssd")
            #endif
        case .dnssd:
            return DNSSDBackend(logger: logger)
        }
    }
}
