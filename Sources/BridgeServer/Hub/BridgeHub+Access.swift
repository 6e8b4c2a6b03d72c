import BridgePairing
import Logging

extension BridgeHub {
    /// Close reason for a WebSocket whose access token expired (code 4001).
    static let tokenExpiredReason = "access token expired; refresh and reconnect"
    /// Close reason for a WebSocket of a revoked device or token family (code 4003).
    static let deviceRevokedReason = "device revoked"

    /// The access token a connection was opened with has expired: it is closed with 4001.
    func tokenExpired(_ id: ConnectionID) {
        guard let client = connections[id] else { return }
        client.logger.notice("closing connection: the access token expired")
        send(.close(.tokenExpired, BridgeHub.tokenExpiredReason), to: id)
    }

    /// A device was revoked: every connection it has open is closed with 4003 at once.
    func deviceRevoked(_ device: String) {
        revoked(.device(device))
    }

    /// A device or a token family was revoked: every connection opened with its tokens is closed with 4003 at once.
    /// (Reported twice, by this process and by the poll, a connection may get a second close frame; only the first is
    /// written.)
    func revoked(_ revocation: TokenRevocation) {
        let affected = connections.closedBy(revocation)
        let metadata: Logger.Metadata = switch revocation {
        case .device(let device): ["device": "\(device)"]
        case .family(let family): ["family": "\(family)"]
        }
        guard !affected.isEmpty else { return }
        logger.notice("revoked: closing connections", metadata: metadata.merging(["connections": "\(affected.count)"]) { $1 })
        for id in affected { send(.close(.deviceRevoked, BridgeHub.deviceRevokedReason), to: id) }
    }
}
