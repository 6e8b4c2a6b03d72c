import BridgeHTTP
import Logging
import NIOCore

/// Bounds each request of a connection in time, head and body (issue 26.1): the first must have fully arrived within
/// ``BridgeServerConfiguration/requestHeadTimeout`` of the accept, each later one within that time of its first byte;
/// a peer that has not finished sending a request by then is closed, whether or not it was answered already (a `404`
/// to a body that then drips one byte at a time ends nothing).
///
/// Dripped bytes extend nothing.
///
/// It sits at the application side of the transport (after TLS, when there is TLS) and before the HTTP codec: it sees
/// the bytes, and ``HTTPEdgeHandler`` (after the decoder) tells it when a request has ended (``requestEnded()``);
/// between requests, Hummingbird's idle timeout (``BridgeServerConfiguration/httpIdleTimeout``) applies. When the
/// connection becomes a WebSocket (``upgraded()``) it stops, and gives back the connection's "not a WebSocket" place in
/// ``ConnectionAdmission``; otherwise that place is given back when the connection closes.
///
/// A connection admitted on probation (on a reserve place, ``ConnectionAdmission/Decision/probation``) has
/// ``probationTimeout`` (or the request bound, when shorter) to become a WebSocket, and its first request must be an
/// upgrade: ``HTTPEdgeHandler`` answers anything else with ``probationRefusal`` (`503 server_busy`).
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = Any
    typealias InboundOut = Any
    typealias OutboundIn = Any
    typealias OutboundOut = Any

    private enum Phase {
        /// A request is arriving (or the first has not yet): the timer runs.
        case request
        /// Between requests.
        case idle
        /// A WebSocket: not bounded here.
        case webSocket
        /// HTTP/2: each stream is bounded by its own ``HTTP2StreamGuard``; the place is held until the close.
        case http2
    }

    /// How long a connection on probation has to become a WebSocket (TLS handshake and upgrade request included).
    static let probationTimeout: TimeAmount = .seconds(5)

    private let admission: ConnectionAdmission
    private let address: String
    private let timeout: TimeAmount
    private let logger: Logger
    /// The connection holds a reserve place (see the type's documentation).
    let probation: Bool
    private var timer: Scheduled<Void>?
    private var phase = Phase.request
    /// The next bytes read start a request line (see ``servingMinorVersionsAsHTTP11(_:)``).
    private var atRequestLine = true
    /// The admission's place was given back.
    private var released = false

    /// A guard for a connection from `address` that `admission` let in (on a reserve place when `probation`), each
    /// request bounded by `timeout`.
    init(admission: ConnectionAdmission, address: String, timeout: TimeAmount, logger: Logger, probation: Bool = false) {
        self.admission = admission
        self.address = address
        self.timeout = probation ? min(timeout, Self.probationTimeout) : timeout
        self.logger = logger
        self.probation = probation
    }

    /// The answer to a request other than a WebSocket upgrade on a connection on probation; `nil` when the connection
    /// holds an ordinary place.
    var probationRefusal: JSONErrorResponse? {
        probation && phase != .webSocket ? admission.busy : nil
    }

    func handlerAdded(context: ChannelHandlerContext) {
        // The clock starts at accept, whether or not the channel is active yet.
        startTimer(context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        release(answered: false)
    }

    /// At a graceful shutdown (``ChannelShouldQuiesceEvent``) a connection with no byte of a request yet (one that
    /// has sent nothing since it opened or since its last request: Chromium keeps a spare one) is closed at once; the
    /// HTTP handlers after this one close the others once their answer is written (issue 25 item 1, finding F5b:
    /// such a connection held serve's stop for the request bound, 9-14 s).
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent, phase == .request, atRequestLine {
            logger.debug("closing a connection without a request at shutdown", metadata: ["remote": "\(address)"])
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if phase == .idle {
            phase = .request
            startTimer(context)
        }
        // Bytes come wrapped as IOData (NIOAny unwraps to `Any` that way).
        if atRequestLine, case .byteBuffer(var bytes)? = unwrapInboundIn(data) as? IOData {
            atRequestLine = false
            Self.servingMinorVersionsAsHTTP11(&bytes)
            context.fireChannelRead(NIOAny(bytes))
            return
        }
        context.fireChannelRead(data)
    }

    /// Rewrites a request line's `HTTP/1.2`…`HTTP/1.9` to `HTTP/1.1` (RFC 9110 §6.2: a server serves a later minor
    /// version of its major one as the one it speaks; NIO's parser refuses them).
    ///
    /// Only the line at the start of a read that starts a request is looked at: a line cut across reads, or a
    /// pipelined request, keeps its version (`505`).
    static func servingMinorVersionsAsHTTP11(_ bytes: inout ByteBuffer) {
        let start = bytes.readerIndex
        let end = start + min(bytes.readableBytes, 8192)
        guard let newline = bytes.withUnsafeReadableBytes({ raw in
            raw[0..<(end - start)].firstIndex(of: UInt8(ascii: "\n"))
        }) else { return }
        var lineEnd = start + newline
        if lineEnd > start, bytes.getInteger(at: lineEnd - 1, as: UInt8.self) == UInt8(ascii: "\r") { lineEnd -= 1 }
        guard lineEnd - start >= 9, bytes.getString(at: lineEnd - 8, length: 7) == "HTTP/1.",
              let minor = bytes.getInteger(at: lineEnd - 1, as: UInt8.self),
              (UInt8(ascii: "2")...UInt8(ascii: "9")).contains(minor),
              bytes.getInteger(at: lineEnd - 9, as: UInt8.self) == UInt8(ascii: " ")
        else { return }
        bytes.setInteger(UInt8(ascii: "1"), at: lineEnd - 1)
    }

    /// The request in progress has fully arrived (head and body): its bound ends (on probation, only the upgrade ends
    /// it: the upgrade check must be done within the bound too).
    func requestEnded() {
        guard phase == .request, !probation else { return }
        phase = .idle
        atRequestLine = true
        timer?.cancel()
        timer = nil
    }

    /// The connection became a WebSocket: nothing more is bounded here, and its admission place is given back.
    func upgraded() {
        phase = .webSocket
        atRequestLine = false
        timer?.cancel()
        timer = nil
        release(answered: true)
    }

    /// The connection speaks HTTP/2 (``HTTP2ProtocolSelector``): its streams are bounded one by one, not its bytes
    /// here; it keeps its admission place (it is not a WebSocket) until it closes.
    ///
    /// On probation the bound stays: such a place is only for a WebSocket, which HTTP/2 never becomes.
    func servingHTTP2() {
        atRequestLine = false
        guard !probation else { return }
        phase = .http2
        timer?.cancel()
        timer = nil
    }

    private func startTimer(_ context: ChannelHandlerContext) {
        timer?.cancel()
        let loopBound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: timeout) {
            let (handler, context) = loopBound.value
            handler.timedOut(context: context)
        }
    }

    private func timedOut(context: ChannelHandlerContext) {
        timer = nil
        guard phase == .request else { return }
        logger.notice("connection closed: no complete request in time", metadata: [
            "remote": "\(address)", "timeout_ms": "\(timeout.nanoseconds / 1_000_000)",
        ])
        context.close(promise: nil)
    }

    private func release(answered: Bool) {
        guard !released else { return }
        released = true
        if answered {
            admission.answered(address, probation: probation)
        } else {
            admission.abandoned(address, probation: probation)
        }
    }
}
