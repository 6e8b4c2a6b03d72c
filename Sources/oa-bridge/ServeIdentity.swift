import BridgeDiscovery
import BridgeServer
import BridgePairing
import BridgeTLS
import Foundation
import Logging

/// The names the bridge's certificate carries, and loading the identity for `serve`.
enum ServeIdentity {
    /// This machine's names: the host name (and `<host>.local`), its LAN addresses (link-local ones left out) and
    /// the tailnet name when Tailscale runs.
    static func names(tailnet: TailnetIdentity?) -> BridgeIdentityNames {
        let addresses = LANAddress.interfaceAddresses()
            .map(\.address)
            .filter { !$0.lowercased().hasPrefix("fe80") && !$0.hasPrefix("169.254.") }
        return BridgeIdentityNames(
            hostName: HostName.current, addresses: addresses + (tailnet?.addresses ?? []), tailscaleName: tailnet?.dnsName)
    }

    /// The identity in `stateDirectory`, made on first use; logs what happened and the pin (never the key).
    static func load(stateDirectory: URL, tailnet: TailnetIdentity?, logger: Logger) throws -> BridgeIdentity {
        let identity = try BridgeIdentity.loadOrCreate(in: stateDirectory, names: names(tailnet: tailnet))
        let metadata: Logger.Metadata = [
            "pin": "\(identity.pin)", "names": "\(identity.dnsNames.joined(separator: ","))",
            "expires": "\(ISO8601DateFormatter().string(from: identity.notValidAfter))",
        ]
        switch identity.origin {
        case .created:
            logger.notice("made this bridge's TLS identity (phones get its pin in the QR code)", metadata: metadata)
        case .reissued:
            logger.info("re-issued this bridge's TLS certificate for the same key (the pin is unchanged)", metadata: metadata)
        case .loaded:
            logger.info("TLS identity loaded", metadata: metadata)
        }
        return identity
    }
}
