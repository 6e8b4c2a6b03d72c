import NIOCore
import NIOWebSocket

extension WebSocketConnector {
    /// The messages of one connection, read once, by one task.
    ///
    /// Fragments are joined (up to the connector's `maxMessageSize`), pings answered with pongs, pongs counted, and
    /// the bridge's close frame answered; the sequence then ends. A frame that breaks the protocol closes the
    /// connection with `1002` (`1009` for a message too large) and throws ``WebSocketConnectorError/protocolViolation(_:)``.
    public struct Messages: AsyncSequence, Sendable {
        /// One complete message.
        public typealias Element = Message

        let inbound: NIOAsyncChannelInboundStream<WebSocketFrame>
        let channel: any Channel
        let state: ConnectionState
        let maxMessageSize: Int

        /// Starts reading.
        ///
        /// Call it once.
        public func makeAsyncIterator() -> Iterator {
            Iterator(frames: inbound.makeAsyncIterator(), channel: channel, state: state, maxMessageSize: maxMessageSize)
        }

        /// Reads frames until a message is complete.
        public struct Iterator: AsyncIteratorProtocol {
            var frames: NIOAsyncChannelInboundStream<WebSocketFrame>.AsyncIterator
            let channel: any Channel
            let state: ConnectionState
            let maxMessageSize: Int
            var partial: (opcode: WebSocketOpcode, data: ByteBuffer)?
            var ended = false

            /// The next message, or `nil` once the connection closed.
            public mutating func next() async throws -> Message? {
                guard !ended else { return nil }
                while let frame = try await frames.next() {
                    switch frame.opcode {
                    case .ping:
                        channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData), promise: nil)
                    case .pong:
                        state.receivedPong()
                    case .connectionClose:
                        var data = frame.unmaskedData
                        let code = data.readWebSocketErrorCode().map(UInt16.init(webSocketErrorCode:)) ?? 1005
                        let reason = data.readString(length: data.readableBytes) ?? ""
                        state.received(close: CloseFrame(code: code, reason: reason))
                        if state.markCloseSent() {
                            var echo = channel.allocator.buffer(capacity: 2)
                            if code != 1005 { echo.writeInteger(code) }
                            let channel = self.channel
                            channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: echo))
                                .whenComplete { _ in channel.close(promise: nil) }
                        } else {
                            channel.close(promise: nil)
                        }
                        ended = true
                        return nil
                    case .text, .binary:
                        guard partial == nil else { throw fail(.protocolError, "a new message began before the last one ended") }
                        if frame.fin { return try message(frame.opcode, frame.unmaskedData) }
                        partial = (frame.opcode, frame.unmaskedData)
                        try checkSize(frame.length)
                    case .continuation:
                        guard var started = partial else { throw fail(.protocolError, "a continuation frame without a message") }
                        var data = frame.unmaskedData
                        try checkSize(started.data.readableBytes + data.readableBytes)
                        started.data.writeBuffer(&data)
                        if frame.fin {
                            partial = nil
                            return try message(started.opcode, started.data)
                        }
                        partial = started
                    default:
                        throw fail(.protocolError, "a frame with the unknown opcode \(frame.opcode)")
                    }
                }
                ended = true
                return nil
            }

            private func checkSize(_ size: Int) throws {
                if size > maxMessageSize { throw fail(.messageTooLarge, "a message of more than \(maxMessageSize) bytes") }
            }

            private func message(_ opcode: WebSocketOpcode, _ data: ByteBuffer) throws -> Message {
                if opcode == .binary { return .binary(Array(data.readableBytesView)) }
                guard let text = String(validating: data.readableBytesView, as: UTF8.self) else {
                    throw fail(.dataInconsistentWithMessage, "a text message that is not UTF-8")
                }
                return .text(text)
            }

            /// Closes with `code` and returns the error to throw.
            private func fail(_ code: WebSocketErrorCode, _ what: String) -> WebSocketConnectorError {
                if state.markCloseSent() {
                    var payload = channel.allocator.buffer(capacity: 2)
                    payload.write(webSocketErrorCode: code)
                    let channel = self.channel
                    channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: payload))
                        .whenComplete { _ in channel.close(promise: nil) }
                } else {
                    channel.close(promise: nil)
                }
                return .protocolViolation(what)
            }
        }
    }
}
