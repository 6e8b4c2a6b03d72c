import BridgeRPC
import NIOCore
import NIOWebSocket

/// What a connection's writer sends next.
enum OutboundFrame: Sendable {
    /// A text frame, already encoded as UTF-8 (one buffer can be shared by every client it goes to).
    case textBytes(ByteBuffer)
    /// A close frame with a reason; nothing is sent after it.
    case close(CloseKind, String)

    /// A text frame.
    static func text(_ text: String) -> OutboundFrame {
        .textBytes(ByteBuffer(string: text))
    }

    /// A text frame holding one JSON-RPC message (encoded straight to bytes).
    static func message(_ message: JSONRPCMessage) -> OutboundFrame {
        .textBytes(ByteBuffer(bytes: message.jsonUTF8))
    }

    /// The close codes the bridge uses.
    enum CloseKind: Sendable {
        /// 1008: the client broke a rule (for example did not initialize in time).
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
