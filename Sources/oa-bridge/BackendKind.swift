public import ArgumentParser
import BridgeDiscovery

/// `--backend avahi|dnssd` of `discover`, `connect` and `doctor`: the library's choice of mDNS implementation.
typealias BackendKind = DiscoveryBackendKind

extension DiscoveryBackendKind: ExpressibleByArgument {}
