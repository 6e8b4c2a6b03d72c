import NIOCore

/// Closes an HTTP/1 connection whose peer takes nothing of a response for ``timeout``: the channel stayed unwritable
/// (NIO's high-water mark of unsent bytes reached) that long.
///
/// An SSE stream (`GET /acp`) whose client stopped reading would otherwise hold its connection and its writer forever
/// once the hub cut the connection off; any other response to a peer that stopped reading ends the same way. No timer
/// runs while the channel is writable.
final class StreamableHTTPStallHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = Any
    typealias InboundOut = Any
    typealias OutboundIn = Any
    typealias OutboundOut = Any

    /// How long a response may wait for its peer to take any of it.
    static let timeout = TimeAmount.seconds(20)

    private let timeout: TimeAmount
    private var timer: Scheduled<Void>?

    init(timeout: TimeAmount = StreamableHTTPStallHandler.timeout) {
        self.timeout = timeout
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            timer?.cancel()
            timer = nil
        } else if timer == nil {
            let channel = context.channel
            timer = context.eventLoop.scheduleTask(in: timeout) {
                channel.close(promise: nil)
            }
        }
        context.fireChannelWritabilityChanged()
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
}
