import Logging
import NIOCore
import NIOTLS

/// Decides, once per connection, whether it speaks HTTP/1.1 or HTTP/2, and has the pipeline for it built then.
///
/// - behind TLS, by ALPN: the handshake's `h2` is HTTP/2, `http/1.1` or nothing is HTTP/1.1 (NIOSSL tells the
///   result with `TLSUserEvent.handshakeCompleted` before any application byte);
/// - in clear, by the first bytes: the HTTP/2 connection preface (`PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`, RFC 9113 §3.4,
///   h2c with prior knowledge) is HTTP/2, anything else HTTP/1.1. A read that is a prefix of the preface waits for
///   the rest (``ConnectionGuard``'s bound covers the wait); the first byte that differs decides HTTP/1.1.
///
/// It sits right after the transport (TLS, when there is TLS), before ``ConnectionGuard``; the bytes read before the
/// decision are kept and passed on, in order, to the handlers `configure` added; then it removes itself. A
/// connection that closes (or only half-closes), or a server that quiesces, before the decision ends here
/// (`configure` never runs).
final class HTTP2ProtocolSelector: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// What a connection speaks.
    enum Choice: Sendable, Equatable {
        case http1
        case http2
    }

    /// The HTTP/2 connection preface a client with prior knowledge starts with.
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    private enum State {
        case waiting
        case configuring
        case done
    }

    private let configure: (Choice, ChannelHandlerContext) throws -> Void
    private let failed: (any Error) -> Void
    private var state = State.waiting
    private var buffered: [NIOAny] = []
    /// The bytes read in clear so far, compared with ``preface``.
    private var seen: [UInt8] = []

    /// A selector that builds the pipeline with `configure` (synchronously, on the event loop) once it knows the
    /// protocol, and calls `failed` when the connection ends first or `configure` throws.
    init(configure: @escaping (Choice, ChannelHandlerContext) throws -> Void, failed: @escaping (any Error) -> Void) {
        self.configure = configure
        self.failed = failed
    }

    /// The choice for the first bytes of a plaintext connection: `nil` while they are a proper prefix of the preface.
    static func choice(forPlaintext bytes: [UInt8]) -> Choice? {
        let count = min(bytes.count, preface.count)
        guard bytes.prefix(count).elementsEqual(preface.prefix(count)) else { return .http1 }
        return count == preface.count ? .http2 : nil
    }

    /// The choice for an ALPN result (`nil`: none negotiated).
    static func choice(forALPN negotiated: String?) -> Choice {
        negotiated == "h2" ? .http2 : .http1
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .waiting = state {
            if let tls = event as? TLSUserEvent, case .handshakeCompleted(let negotiated) = tls {
                context.fireUserInboundEventTriggered(event)
                decide(Self.choice(forALPN: negotiated), context: context)
                return
            }
            if event is ChannelShouldQuiesceEvent {
                // Shutting down before the connection said what it is: nothing of it is in progress.
                context.close(promise: nil)
            }
            if case .inputClosed = event as? ChannelEvent {
                // The peer closed before it said what it speaks (the server allows half-closure for HTTP/1.1's
                // sake, so nothing else closes it here): no request can follow, and its admission place is freed
                // now instead of when the request bound runs out.
                context.close(promise: nil)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch state {
        case .done:
            context.fireChannelRead(data)
        case .configuring:
            buffered.append(data)
        case .waiting:
            // A read before any TLS handshake event: the connection is in clear.
            buffered.append(data)
            let bytes = unwrapInboundIn(data)
            seen.append(contentsOf: bytes.readableBytesView.prefix(Self.preface.count - seen.count))
            if let choice = Self.choice(forPlaintext: seen) {
                decide(choice, context: context)
            }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if case .done = state { context.fireChannelReadComplete() }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if case .waiting = state {
            state = .done
            failed(ChannelError.inputClosed)
        }
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if case .waiting = state {
            state = .done
            failed(ChannelError.inputClosed)
        }
    }

    private func decide(_ choice: Choice, context: ChannelHandlerContext) {
        state = .configuring
        seen = []
        do {
            try configure(choice, context)
        } catch {
            state = .done
            buffered = []
            failed(error)
            context.close(promise: nil)
            return
        }
        state = .done
        let pending = buffered
        buffered = []
        for data in pending { context.fireChannelRead(data) }
        if !pending.isEmpty { context.fireChannelReadComplete() }
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}
