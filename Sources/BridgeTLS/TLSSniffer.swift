package import Logging
package import NIOCore
package import NIOSSL
package import Synchronization

/// First in a new connection's pipeline: waits for the first byte; `0x16` (a TLS handshake record) puts a
/// `NIOSSLServerHandler` behind it (and a ``TLSWriteCoalescer`` behind that, so one flush is one TLS record), anything
/// else stays plaintext HTTP; then it removes itself and hands the bytes on.
///
/// A connection that sends nothing within `timeout` is closed; so is a TLS connection whose handshake has not completed
/// by then (``TLSHandshakeDeadline``).
package final class TLSSniffer: ChannelInboundHandler, RemovableChannelHandler {
    package typealias InboundIn = ByteBuffer
    package typealias InboundOut = ByteBuffer

    /// The first byte of every TLS record that starts a handshake (content type 22).
    static let handshakeRecord: UInt8 = 0x16

    /// Whether new TLS connections get a ``TLSWriteCoalescer`` (always, in the bridge): off only for the benchmark's
    /// side-by-side runs of one binary (`bench bridge --tls-coalesce no`, BENCHMARKS.md issue 32).
    package static let coalescesWrites = Atomic<Bool>(true)

    private let sslContext: NIOSSLContext
    private let timeout: TimeAmount
    private let logger: Logger
    private var deadline: Scheduled<Void>?
    private var decided = false

    package init(sslContext: NIOSSLContext, timeout: TimeAmount, logger: Logger) {
        self.sslContext = sslContext
        self.timeout = timeout
        self.logger = logger
    }

    package func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context) }
    }

    package func channelActive(context: ChannelHandlerContext) {
        arm(context)
        context.fireChannelActive()
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !decided else {
            context.fireChannelRead(data)
            return
        }
        let buffer = unwrapInboundIn(data)
        guard let first = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) else { return }
        decided = true
        deadline?.cancel()
        deadline = nil
        if first == Self.handshakeRecord {
            do {
                let operations = context.pipeline.syncOperations
                // Order after this handler: NIOSSLServerHandler, TLSHandshakeDeadline, TLSWriteCoalescer.
                if Self.coalescesWrites.load(ordering: .relaxed) {
                    try operations.addHandler(TLSWriteCoalescer(), position: .after(self))
                }
                try operations.addHandler(TLSHandshakeDeadline(timeout: timeout, logger: logger), position: .after(self))
                try operations.addHandler(NIOSSLServerHandler(context: sslContext), position: .after(self))
            } catch {
                logger.warning("cannot start TLS on a connection", metadata: ["error": "\(error)"])
                context.close(promise: nil)
                return
            }
            TLSConnections.shared.mark(context.channel)
        }
        context.fireChannelRead(data)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    private func arm(_ context: ChannelHandlerContext) {
        guard deadline == nil, !decided else { return }
        let channel = context.channel
        let logger = self.logger
        let timeout = self.timeout
        deadline = context.eventLoop.scheduleTask(in: timeout) {
            logger.debug("closing a connection that sent nothing", metadata: [
                "remote": "\(channel.remoteAddress?.description ?? "?")", "timeout_ms": "\(timeout.nanoseconds / 1_000_000)",
            ])
            channel.close(promise: nil)
        }
    }
}
