import HummingbirdWebSocket
import NIOWebSocket

/// What a connection's writer sends next.
enum OutboundFrame: Sendable {
    /// A text frame.
    case text(String)
    /// A close frame with a reason; nothing is sent after it.
    case close(CloseKind, String)

    /// The close codes the bridge uses.
    enum CloseKind: Sendable {
        /// 1008: the client broke a rule (e.g. did not initialize in time).
        case policyViolation
        /// 1009: a message was too large.
        case messageTooBig
        /// 1001: the bridge is shutting down.
        case goingAway
        /// 4001: the access token the WebSocket was opened with expired; refresh and reconnect.
        case tokenExpired
        /// 4003: the device was revoked.
        case deviceRevoked

        /// The WebSocket close code.
        var code: WebSocketErrorCode {
            switch self {
            case .policyViolation: .policyViolation
            case .messageTooBig: .messageTooLarge
            case .goingAway: .goingAway
            case .tokenExpired: .unknown(4001)
            case .deviceRevoked: .unknown(4003)
            }
        }
    }
}
