import BridgeDiagnostics
import BridgeDiscovery

/// One line of `discover --json`: the library's record with the handshake result under `probe`.
typealias DiscoverRecord = DiscoveryRecord<DiscoveryProbeJSON>
