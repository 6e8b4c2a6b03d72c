import BridgeHTTP
import BridgeTime
import Foundation
import NIOCore

/// Answers a connection that ``ConnectionAdmission`` turned away: a `503` with a JSON body and `Connection: close`,
/// in the client's own protocol, then a half-close, so the peer reads the answer instead of a reset; whatever the peer
/// sends is dropped, and the channel is closed when the peer closes or after ``linger``, whichever is first.
///
/// The answer waits for the client to speak (an HTTP client always does first): plaintext bytes are answered in
/// plaintext; a TLS client's `ClientHello` puts TLS in front of this handler (``TLSSniffer``), and the answer goes out
/// inside TLS when its request arrives after the handshake (issue 26.8: it was written in plaintext to a client that
/// spoke TLS, which read it as a broken handshake). A client that has sent no request within ``deadline`` of the
/// accept is closed without an answer.
final class ConnectionRefusalHandler: ChannelInboundHandler {
    typealias InboundIn = Any

    /// How long a refused connection may stay half-closed after its answer, so the peer can read it.
    static let linger: TimeAmount = .milliseconds(500)
    /// How long a refused connection may take, from accept, to send its first bytes (or complete its TLS handshake).
    static let deadline: TimeAmount = .seconds(2)

    private let refusal: JSONErrorResponse
    /// The clock whose wall time the answer's `Date` header gives.
    private let clock: any BridgeClock
    private var answered = false
    private var timer: Scheduled<Void>?

    init(refusal: JSONErrorResponse, clock: any BridgeClock = ContinuousClock()) {
        self.refusal = refusal
        self.clock = clock
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context, Self.deadline) }
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(context, Self.deadline)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // The first plaintext bytes: behind TLS, the first decrypted ones (the request after the handshake).
        answer(context: context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func arm(_ context: ChannelHandlerContext, _ delay: TimeAmount) {
        guard timer == nil || answered else { return }
        timer?.cancel()
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: delay) { loopBound.value.close(promise: nil) }
    }

    private func answer(context: ChannelHandlerContext) {
        guard !answered else { return }
        answered = true
        let bytes = context.channel.allocator.buffer(string: refusal.closingHTTP1Text(date: clock.wallTime))
        context.writeAndFlush(NIOAny(bytes), promise: nil)
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        // Behind TLS this sends close_notify first (NIOSSLHandler's output close).
        context.close(mode: .output).whenFailure { _ in loopBound.value.close(promise: nil) }
        arm(context, Self.linger)
    }
}
