import NIOCore

/// Just behind the `NIOSSLServerHandler`: the writes of one flush reach it as one buffer, so they leave as one TLS
/// record (up to 16 KiB each) instead of one record per write.
///
/// NIOSSL passes every write to `SSL_write` on its own, and every `SSL_write` is at least one record: a header, an
/// AEAD tag and a seal for each, and as many opens at the phone. The WebSocket encoder writes a frame's header and its
/// payload as two writes (it cannot prepend the header to a payload buffer that is shared, as a relayed update's is
/// by every client it goes to), so a burst of 64 updates was 128 records. Copying the bytes into one buffer costs less
/// than the records it saves (BENCHMARKS.md, issue 32). A flush with a single write passes it on untouched.
final class TLSWriteCoalescer: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Writes past this many bytes in one flush go on as they are: NIOSSL cuts them into records anyway.
    static let maximumCoalescedBytes = 16 * 1024

    private var first: ByteBuffer?
    private var combined: ByteBuffer?
    /// The held writes' promises as one (the bridge's writer passes one per batch, so joining is rare).
    private var promise: EventLoopPromise<Void>?

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        var buffer = unwrapOutboundIn(data)
        if let promise {
            if let held = self.promise {
                let joined = context.eventLoop.makePromise(of: Void.self)
                joined.futureResult.cascade(to: held)
                joined.futureResult.cascade(to: promise)
                self.promise = joined
            } else {
                self.promise = promise
            }
        }
        if var combined {
            self.combined = nil
            combined.writeBuffer(&buffer)
            self.combined = combined
        } else if var first {
            self.first = nil
            var joined = context.channel.allocator.buffer(capacity: first.readableBytes + buffer.readableBytes)
            joined.writeBuffer(&first)
            joined.writeBuffer(&buffer)
            combined = joined
        } else {
            first = buffer
        }
        if (combined?.readableBytes ?? 0) >= Self.maximumCoalescedBytes { passOn(context: context) }
    }

    func flush(context: ChannelHandlerContext) {
        passOn(context: context)
        context.flush()
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        // Unflushed writes go on unflushed: what happens to them at a close is NIOSSL's to decide, as before.
        passOn(context: context)
        context.close(mode: mode, promise: promise)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        passOn(context: context)
    }

    /// Writes what is held (unflushed) to the next handler, with a promise that completes every held write's.
    private func passOn(context: ChannelHandlerContext) {
        guard let buffer = combined ?? first else { return }
        combined = nil
        first = nil
        let held = promise
        promise = nil
        context.write(wrapOutboundOut(buffer), promise: held)
    }
}
