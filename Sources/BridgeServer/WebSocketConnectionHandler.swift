import NIOCore
import NIOWebSocket

/// The WebSocket protocol of one upgraded client connection, on its event loop: it assembles messages from frames,
/// answers pings and the close handshake, refuses what RFC 6455 forbids, and hands each whole message to the
/// connection's task through ``ClientMessages`` (one hand-off per message; issue 14 goal 1: Hummingbird's WebSocket
/// handler took two, through a task of its own).
///
/// Rules (the same as swift-websocket's server handler, which this replaces):
/// - client frames must be masked, with no reserved bits; reserved opcodes, a continuation without a message, a new
///   message inside a fragmented one and a fragmented control frame close with 1002;
/// - a message over `maxMessageSize` closes with 1009 (a single frame over it is refused by the frame decoder);
/// - a ping is answered with a pong of the same payload; pongs go on to ``WebSocketKeepalive`` before it;
/// - a close from the peer is answered (1000, or 1002 for an invalid code or reason) and the connection closed;
/// - a close the bridge sends (any close frame written through the pipeline) stops delivery; the peer's answering
///   close then closes the connection (``ConnectionCloser`` closes it if none comes).
///
/// Backpressure: while ``ClientMessages/highWater`` messages wait for the connection's task, the handler holds
/// reads from the socket; the task resumes them once it is down to ``ClientMessages/lowWater``.
final class WebSocketConnectionHandler: ChannelDuplexHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let messages: ClientMessages
    private let maxMessageSize: Int
    private let closeTimeout: TimeAmount
    /// The message being assembled from fragments: its opcode and bytes so far.
    private var fragments: (opcode: WebSocketOpcode, data: ByteBuffer)?
    /// A close frame went out (the bridge's, or the answer to the peer's).
    private var closeSent = false
    /// A read was asked for while too many messages waited.
    private var readHeld = false
    private var closeTimer: Scheduled<Void>?
    private var context: ChannelHandlerContext?

    /// A handler delivering into `messages`, closing with 1009 beyond `maxMessageSize` bytes; after a close it sent
    /// itself (a protocol error), it waits `closeTimeout` for the peer's answer.
    init(messages: ClientMessages, maxMessageSize: Int, closeTimeout: TimeAmount) {
        self.messages = messages
        self.maxMessageSize = maxMessageSize
        self.closeTimeout = closeTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        messages.onLowWater = { [eventLoop = context.eventLoop] in
            eventLoop.execute { loopBound.value.resumeReading() }
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        closeTimer?.cancel()
        closeTimer = nil
        self.context = nil
        messages.finish()
    }

    func channelInactive(context: ChannelHandlerContext) {
        closeTimer?.cancel()
        closeTimer = nil
        messages.finish()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // The frame decoder's errors were answered by NIO's protocol error handler before this one; anything else
        // (a reset, a TLS failure) ends the connection.
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        guard frame.maskKey != nil, frame.reservedBits.isEmpty else {
            return fail(context, .protocolError)
        }
        switch frame.opcode {
        case .text, .binary:
            guard fragments == nil else { return fail(context, .protocolError) }
            let data = frame.unmaskedData
            guard data.readableBytes <= maxMessageSize else { return fail(context, .messageTooLarge) }
            if frame.fin {
                deliver(frame.opcode, data)
            } else {
                fragments = (frame.opcode, data)
            }
        case .continuation:
            guard let (opcode, received) = fragments else { return fail(context, .protocolError) }
            fragments = nil
            var data = received
            var more = frame.unmaskedData
            guard data.readableBytes + more.readableBytes <= maxMessageSize else { return fail(context, .messageTooLarge) }
            data.writeBuffer(&more)
            if frame.fin {
                deliver(opcode, data)
            } else {
                fragments = (opcode, data)
            }
        case .ping:
            guard frame.fin else { return fail(context, .protocolError) }
            guard !closeSent else { return }
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
        case .pong:
            break
        case .connectionClose:
            receivedClose(context, frame.unmaskedData)
        default:
            fail(context, .protocolError)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if unwrapOutboundIn(data).opcode == .connectionClose {
            closeSent = true
            fragments = nil
        }
        context.write(data, promise: promise)
    }

    func read(context: ChannelHandlerContext) {
        if messages.holdReads() {
            readHeld = true
        } else {
            context.read()
        }
    }

    /// Reads again after ``read(context:)`` held them (the connection's task took enough messages).
    private func resumeReading() {
        guard readHeld, let context else { return }
        readHeld = false
        context.read()
    }

    private func deliver(_ opcode: WebSocketOpcode, _ data: ByteBuffer) {
        // After a close went out the peer's data is not read (RFC 6455 §5.5.1).
        guard !closeSent else { return }
        messages.yield(opcode == .text ? .text(data) : .binary(data))
    }

    private func receivedClose(_ context: ChannelHandlerContext, _ payload: ByteBuffer) {
        messages.finish()
        if closeSent {
            // The answer to the bridge's close: done.
            context.close(promise: nil)
            return
        }
        var payload = payload
        let size = payload.readableBytes
        let code = payload.readWebSocketErrorCode()
        let reasonValid = String(validating: payload.readableBytesView, as: UTF8.self) != nil
        var answer = WebSocketErrorCode.normalClosure
        if size == 1 || !reasonValid {
            answer = .protocolError
        } else if case .unknown(let raw) = code, raw < 3000 || raw > 4999 {
            answer = .protocolError
        }
        sendClose(context, answer)
        context.close(promise: nil)
    }

    /// Answers a protocol violation: a close with `code`, then the connection closes when the peer answers it or
    /// after the close timeout.
    private func fail(_ context: ChannelHandlerContext, _ code: WebSocketErrorCode) {
        messages.finish()
        guard !closeSent else { return }
        sendClose(context, code)
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        closeTimer = context.eventLoop.scheduleTask(in: closeTimeout) { loopBound.value.close(promise: nil) }
    }

    private func sendClose(_ context: ChannelHandlerContext, _ code: WebSocketErrorCode) {
        closeSent = true
        fragments = nil
        var payload = context.channel.allocator.buffer(capacity: 2)
        payload.write(webSocketErrorCode: code)
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: payload)), promise: nil)
    }
}
