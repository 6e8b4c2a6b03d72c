import NIOCore

/// Turns the flushes of one event-loop turn into at most two, so a burst of frames to a client (a prompt's
/// `session/update`s) goes out in a few `writev`s instead of one system call per frame.
///
/// The WebSocket writer flushes after every frame. The first flush of a turn goes out at once (a lone answer waits
/// for nothing); later ones in the same turn are deferred to a task queued on the channel's event loop, which runs
/// after the writes already queued, and all of them join it. A pending flush is done before the channel closes or
/// the handler goes. Writability (and so the writers' backpressure) is unchanged: NIO counts unflushed bytes against
/// the high-water mark too. An upgraded WebSocket connection removes it (``BridgeUpgradeChannel``): its frames go out
/// through ``OutboundQueue``, one flush per batch, and a job per answer to end the turn cost more than it saved.
final class FlushCoalescer: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = Any
    typealias OutboundOut = Any

    /// A flush went out in this turn; the task that ends the turn is queued.
    private var turnOpen = false
    /// A flush was asked for after that and is not done yet.
    private var flushPending = false

    func flush(context: ChannelHandlerContext) {
        if turnOpen {
            flushPending = true
            return
        }
        turnOpen = true
        context.flush()
        context.eventLoop.assumeIsolated().execute { [self] in
            turnOpen = false
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
