import NIOCore

/// Turns the flushes of one event-loop turn into one, so a burst of frames to a client (a prompt's `session/update`s)
/// goes out in one `writev` instead of one system call per frame.
///
/// The WebSocket writer flushes after every frame. Here a flush is deferred to a task queued on the channel's event
/// loop: writes queued in the meantime join it. Nothing is held back beyond that turn, and a pending flush is done
/// before the channel closes or the handler goes. Writability (and so the writers' backpressure) is unchanged: NIO
/// counts unflushed bytes against the high-water mark too.
final class FlushCoalescer: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = Any
    typealias OutboundOut = Any

    private var flushPending = false

    func flush(context: ChannelHandlerContext) {
        guard !flushPending else { return }
        flushPending = true
        context.eventLoop.assumeIsolated().execute { [self] in
            flushNow(context)
        }
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        flushNow(context)
        context.close(mode: mode, promise: promise)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        flushNow(context)
    }

    private func flushNow(_ context: ChannelHandlerContext) {
        guard flushPending else { return }
        flushPending = false
        context.flush()
    }
}
