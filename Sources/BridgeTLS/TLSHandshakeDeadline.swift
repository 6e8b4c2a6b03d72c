import Logging
import NIOCore
import NIOTLS

/// Behind the `NIOSSLServerHandler`: closes the connection when the TLS handshake has not completed within the
/// timeout (a ClientHello and then silence), then steps aside once it has.
final class TLSHandshakeDeadline: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private let timeout: TimeAmount
    private let logger: Logger
    private var deadline: Scheduled<Void>?

    init(timeout: TimeAmount, logger: Logger) {
        self.timeout = timeout
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        let logger = self.logger
        deadline = context.eventLoop.scheduleTask(in: timeout) {
            logger.notice("closing a TLS connection whose handshake did not complete in time", metadata: [
                "remote": "\(channel.remoteAddress?.description ?? "?")",
            ])
            channel.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let tlsEvent = event as? TLSUserEvent, case .handshakeCompleted = tlsEvent {
            deadline?.cancel()
            deadline = nil
            context.fireUserInboundEventTriggered(event)
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}
