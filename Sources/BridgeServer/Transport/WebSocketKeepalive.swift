import NIOCore
import NIOWebSocket

/// Keepalive pings of one WebSocket connection, on its event loop (no task per connection): every `period` a ping
/// with a fresh random payload; a connection whose last ping got no matching pong by the next one is sent a close
/// (1001 "Ping timeout") and closed.
///
/// The same rules as swift-websocket's auto-ping (`--ping-interval`), which is off.
///
/// It sits right after the WebSocket frame decoder, sees pongs on their way in and passes every frame on.
final class WebSocketKeepalive: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let period: TimeAmount
    private var timer: Scheduled<Void>?
    /// The payload of the ping not answered yet.
    private var unanswered: ByteBuffer?

    init(period: TimeAmount) {
        self.period = period
    }

    /// Adds the keepalive to `channel`'s WebSocket pipeline, after its frame decoder; on the channel's event loop.
    static func install(on channel: any Channel, period: Duration) {
        channel.eventLoop.execute {
            let operations = channel.pipeline.syncOperations
            guard let decoder = try? operations.context(handlerType: ByteToMessageHandler<WebSocketFrameDecoder>.self) else { return }
            try? operations.addHandler(WebSocketKeepalive(period: TimeAmount(period)), position: .after(decoder.handler))
        }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        schedule(context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        if frame.opcode == .pong, frame.fin, let unanswered, frame.unmaskedData == unanswered {
            self.unanswered = nil
        }
        context.fireChannelRead(data)
    }

    private func schedule(_ context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        let loopBound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: period) {
            let (handler, context) = loopBound.value
            handler.tick(context)
        }
    }

    private func tick(_ context: ChannelHandlerContext) {
        timer = nil
        if unanswered != nil {
            var reason = context.channel.allocator.buffer(capacity: 14)
            reason.write(webSocketErrorCode: .goingAway)
            reason.writeString("Ping timeout")
            context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: reason)), promise: nil)
            context.flush()
            context.close(promise: nil)
            return
        }
        var payload = context.channel.allocator.buffer(capacity: 16)
        for _ in 0..<2 { payload.writeInteger(UInt64.random(in: .min ... .max)) }
        unanswered = payload
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .ping, data: payload)), promise: nil)
        schedule(context)
    }
}
