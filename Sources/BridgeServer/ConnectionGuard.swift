import Logging
import NIOCore

/// Bounds the time before a connection's first answer: a peer that has not sent a complete request (and so got no
/// answer — a response, or the WebSocket `101`) within ``BridgeServerConfiguration/requestHeadTimeout`` of its
/// accept is closed. Slowly dripped request heads and bodies do not extend it.
///
/// It sits at the application side of the transport (after TLS, when there is TLS) and before the HTTP codec, so
/// "an answer" is the first plaintext write. It then releases the connection's "waiting" place in
/// ``ConnectionAdmission`` and only passes data on (removing itself from inside `write` lost the write's completion
/// on an EmbeddedChannel, so it stays); later requests on a kept-alive connection are bounded by Hummingbird's idle
/// timeout (``BridgeServerConfiguration/httpIdleTimeout``), WebSockets by their own timers.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = Any
    typealias InboundOut = Any
    typealias OutboundIn = Any
    typealias OutboundOut = Any

    private let admission: ConnectionAdmission
    private let address: String
    private let timeout: TimeAmount
    private let logger: Logger
    private var timer: Scheduled<Void>?
    /// The admission's "waiting" place was given back.
    private var released = false

    init(admission: ConnectionAdmission, address: String, timeout: TimeAmount, logger: Logger) {
        self.admission = admission
        self.address = address
        self.timeout = timeout
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        // The clock starts at accept, whether or not the channel is active yet.
        let loopBound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: timeout) {
            let (handler, context) = loopBound.value
            handler.timedOut(context: context)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        release(answered: false)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        context.write(data, promise: promise)
        guard !released else { return }
        timer?.cancel()
        timer = nil
        release(answered: true)
    }

    private func timedOut(context: ChannelHandlerContext) {
        timer = nil
        guard !released else { return }
        logger.notice("connection closed: no complete request in time", metadata: [
            "remote": "\(address)", "timeout_ms": "\(timeout.nanoseconds / 1_000_000)",
        ])
        context.close(promise: nil)
    }

    private func release(answered: Bool) {
        guard !released else { return }
        released = true
        if answered { admission.answered(address) } else { admission.abandoned(address) }
    }
}
