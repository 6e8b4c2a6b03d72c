public import BridgeTLS
import NIOCore
public import NIOWebSocket
import Synchronization

extension WebSocketConnector {
    /// An open WebSocket, handed to the body of `WebSocketConnector.connect(to:headers:body:)`.
    ///
    /// Iterate ``messages`` once, from one task (it is the connection's single inbound stream); ``send(text:)`` and ``close(code:reason:)`` may be called from any task.
    /// Pings from the bridge are answered, fragmented messages joined, and a close frame answered, here.
    public struct Connection: Sendable {
        /// Where it went.
        public let target: Target
        /// The peer's IP address (`192.168.1.20`, `fe80::1%eth0`), if known.
        public let remoteAddress: String?
        /// The pin of the certificate the bridge presented (`sha256/…`), for `wss://`; `nil` for `ws://`.
        ///
        /// With trust on first use this is the pin to show and to store.
        public let certificatePin: CertificatePin?
        /// The messages the bridge sends, in order; ends when the connection closes.
        ///
        /// Iterate it once.
        public let messages: Messages

        let channel: any Channel
        let state: ConnectionState

        init(
            target: Target, certificatePin: CertificatePin?, channel: any Channel,
            inbound: NIOAsyncChannelInboundStream<WebSocketFrame>, maxMessageSize: Int
        ) {
            self.target = target
            self.remoteAddress = channel.remoteAddress?.ipAddress
            self.certificatePin = certificatePin
            self.channel = channel
            let state = ConnectionState()
            self.state = state
            self.messages = Messages(inbound: inbound, channel: channel, state: state, maxMessageSize: maxMessageSize)
        }

        /// Sends one text message; returns once it is written to the socket.
        public func send(text: String) async throws {
            try await write(.text, channel.allocator.buffer(string: text))
        }

        /// Sends one binary message.
        public func send(binary: [UInt8]) async throws {
            try await write(.binary, channel.allocator.buffer(bytes: binary))
        }

        /// Sends a ping; the bridge's pong is counted by ``pongsReceived``.
        public func ping() async throws {
            try await write(.ping, channel.allocator.buffer(bytes: [0x6f, 0x61]))
        }

        /// Starts the closing handshake: a close frame with `code`; ``messages`` ends when the bridge answers it or the
        /// connection drops.
        ///
        /// A second call does nothing.
        public func close(code: WebSocketErrorCode = .normalClosure, reason: String = "") async throws {
            guard state.markCloseSent() else { return }
            var payload = channel.allocator.buffer(capacity: 2 + reason.utf8.count)
            payload.write(webSocketErrorCode: code)
            payload.writeString(String(reason.prefix(40)))  // a control frame carries at most 125 bytes
            try await channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: payload))
        }

        /// Sends a normal close frame if none went out yet, without waiting for it to be written (the connection is
        /// about to close).
        func closeWithoutWaiting() {
            guard state.markCloseSent() else { return }
            var payload = channel.allocator.buffer(capacity: 2)
            payload.write(webSocketErrorCode: .normalClosure)
            channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: payload), promise: nil)
        }

        /// Closes the TCP connection at once, without a closing handshake.
        public func abort() {
            channel.close(promise: nil)
        }

        /// The bridge's close frame (code and reason), once it sent one.
        public var closeFrame: CloseFrame? { state.closeFrame }

        /// How many pongs the bridge has sent (answers to ``ping()``).
        public var pongsReceived: Int { state.pongs }

        private func write(_ opcode: WebSocketOpcode, _ data: ByteBuffer) async throws {
            guard !state.closeSent else { throw WebSocketConnectorError.protocolViolation("cannot send after the close frame") }
            // A client masks every frame (RFC 6455 §5.3).
            try await channel.writeAndFlush(WebSocketFrame(fin: true, opcode: opcode, maskKey: .random(), data: data))
        }
    }

    /// A close frame's code and reason.
    public struct CloseFrame: Sendable, Hashable {
        /// The close code, for example `1000`, or the bridge's `4001` when the access token expired.
        public var code: UInt16
        /// The reason, if any.
        public var reason: String
    }

    /// A complete WebSocket message.
    public enum Message: Sendable, Hashable {
        /// A text message.
        case text(String)
        /// A binary message.
        case binary([UInt8])
    }

    /// What both sides of a connection share: whether a close frame went out, the peer's close frame, pongs seen.
    final class ConnectionState: Sendable {
        private struct Fields {
            var closeSent = false
            var closeFrame: CloseFrame?
            var pongs = 0
        }

        private let fields = Mutex(Fields())

        var closeSent: Bool { fields.withLock { $0.closeSent } }
        var closeFrame: CloseFrame? { fields.withLock { $0.closeFrame } }
        var pongs: Int { fields.withLock { $0.pongs } }

        /// Marks the close frame as sent; `false` when it already was.
        func markCloseSent() -> Bool {
            fields.withLock { fields in
                defer { fields.closeSent = true }
                return !fields.closeSent
            }
        }

        func received(close frame: CloseFrame) { fields.withLock { $0.closeFrame = frame } }
        func receivedPong() { fields.withLock { $0.pongs += 1 } }
    }
}
