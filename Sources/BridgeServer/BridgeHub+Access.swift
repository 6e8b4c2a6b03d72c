import Logging

extension BridgeHub {
    /// Close reason for a WebSocket whose access token expired (code 4001).
    static let tokenExpiredReason = "access token expired; refresh and reconnect"
    /// Close reason for a WebSocket of a revoked device (code 4003).
    static let deviceRevokedReason = "device revoked"

    /// The access token a connection was opened with has expired: it is closed with 4001.
    func tokenExpired(_ id: ConnectionID) {
        guard let client = connections[id] else { return }
        client.logger.notice("closing connection: the access token expired")
        send(.close(.tokenExpired, BridgeHub.tokenExpiredReason), to: id)
    }

    /// A device was revoked: every connection it has open is closed with 4003 at once.
    func deviceRevoked(_ device: String) {
        let affected = connections.filter { $0.value.device == device }
        guard !affected.isEmpty else { return }
        logger.notice("device revoked: closing its connections", metadata: ["device": "\(device)", "connections": "\(affected.count)"])
        for id in affected.keys { send(.close(.deviceRevoked, BridgeHub.deviceRevokedReason), to: id) }
    }
}
