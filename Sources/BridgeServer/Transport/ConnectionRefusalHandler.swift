import BridgeHTTP
import NIOCore

/// Answers a connection that ``ConnectionAdmission`` turned away: a `503` with a JSON body and `Connection: close`
/// as soon as the channel is active, then a half-close, so the peer reads the answer instead of a reset; whatever the
/// peer sends is dropped, and the channel is closed when the peer closes or after ``linger``, whichever is first.
final class ConnectionRefusalHandler: ChannelInboundHandler {
    typealias InboundIn = Any

    /// How long a refused connection may stay half-closed, so the peer can read the answer.
    static let linger: TimeAmount = .milliseconds(500)

    private let refusal: JSONErrorResponse
    private var answered = false
    private var timer: Scheduled<Void>?

    init(refusal: JSONErrorResponse) {
        self.refusal = refusal
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { answer(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        answer(context: context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func answer(context: ChannelHandlerContext) {
        guard !answered else { return }
        answered = true
        let bytes = context.channel.allocator.buffer(string: UpgradeRefusals.bytes(of: refusal))
        context.writeAndFlush(NIOAny(bytes), promise: nil)
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.close(mode: .output).whenFailure { _ in loopBound.value.close(promise: nil) }
        timer = context.eventLoop.scheduleTask(in: Self.linger) { loopBound.value.close(promise: nil) }
    }
}
