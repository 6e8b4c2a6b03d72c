import BridgeHTTP
import HTTPTypes
import Logging
import NIOCore
import NIOHTTPTypes

/// The edges of one HTTP/2 stream, what ``ConnectionGuard`` and ``HTTPEdgeHandler`` are to an HTTP/1.1 connection,
/// right after the stream's HTTP codec.
///
/// - the request (head and body) must have fully arrived within `timeout` of the stream's opening (the request
///   time bound, ``BridgeServerConfiguration/requestHeadTimeout``), or the stream is reset;
/// - a body over `maxBodySize` (by `content-length`, or as it arrives): `413`, and the stream is reset;
/// - `CONNECT` (an RFC 8441 WebSocket, which the bridge does not offer: it never sends
///   `SETTINGS_ENABLE_CONNECT_PROTOCOL`): `501` with a body that says to open the WebSocket over HTTP/1.1;
/// - no `:authority` and no `Host`: `400` (the Host checks need one);
/// - `HEAD` is answered as `GET` without the body;
/// - on a connection admitted on probation (only a WebSocket upgrade may use such a place): `busy`
///   (`503 server_busy`).
final class HTTP2StreamGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let timeout: TimeAmount
    private let maxBodySize: Int
    private let busy: JSONErrorResponse?
    private let logger: Logger
    private var timer: Scheduled<Void>?
    private var ended = false
    private var request: RequestInProgress

    /// A guard for one stream (see the type's documentation); `busy` is the answer to every request on a connection
    /// on probation.
    init(timeout: TimeAmount, maxBodySize: Int, busy: JSONErrorResponse?, logger: Logger) {
        self.timeout = timeout
        self.maxBodySize = maxBodySize
        self.request = RequestInProgress(maxBodySize: maxBodySize)
        self.busy = busy
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: timeout) {
            let (handler, context) = loopBound.value
            handler.timedOut(context: context)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(var head):
            if let refusal = refusal(for: head) {
                request.drop()
                return answer(context, refusal)
            }
            if head.method == .head {
                head.method = .get
                request.isHead = true
            }
            context.fireChannelRead(wrapInboundOut(.head(head)))
        case .body(let body):
            switch request.body(body.readableBytes) {
            case .pass: context.fireChannelRead(data)
            case .drop: return
            case .refuseTooLarge: answer(context, Self.tooLarge(maxBodySize))
            case .closeTooLarge: context.close(promise: nil)
            }
        case .end:
            ended = true
            timer?.cancel()
            timer = nil
            guard !request.dropping else { return }
            context.fireChannelRead(data)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head):
            request.answerStarted(final: head.status.kind != .informational)
            context.write(data, promise: promise)
        case .body:
            if request.isHead {
                promise?.succeed()
            } else {
                context.write(data, promise: promise)
            }
        case .end:
            context.write(data, promise: promise)
        }
    }

    /// The refusal of a request head, if it is refused here.
    private func refusal(for head: HTTPRequest) -> JSONErrorResponse? {
        if let busy { return busy }
        if head.method == .connect {
            return JSONErrorResponse(
                status: .notImplemented, code: "websocket_needs_http1",
                message: "The bridge offers no CONNECT over HTTP/2 (RFC 8441 WebSockets included): open the WebSocket "
                    + "on an HTTP/1.1 connection (ALPN http/1.1).")
        }
        if head.authority == nil, !head.headerFields.contains(where: { $0.name.canonicalName == "host" }) {
            return JSONErrorResponse(
                status: .badRequest, code: "missing_authority", message: "The request names no :authority (nor Host).")
        }
        if let length = head.headerFields[.contentLength].flatMap({ Int($0) }), length > maxBodySize {
            return Self.tooLarge(maxBodySize)
        }
        return nil
    }

    private static func tooLarge(_ limit: Int) -> JSONErrorResponse {
        JSONErrorResponse(
            status: .contentTooLarge, code: "payload_too_large",
            message: "The request body is larger than the bridge takes (\(limit) bytes).", extra: ["limit": limit])
    }

    /// Writes `refusal` as the stream's response; a stream whose request is still arriving is then reset.
    private func answer(_ context: ChannelHandlerContext, _ refusal: JSONErrorResponse) {
        guard !request.responded else { return }
        request.answerStarted(final: true)
        var head = refusal.head()
        if request.isHead { head.headerFields[.contentLength] = "0" }
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(refusal.body)), promise: nil)
        let loopBound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
            let (handler, context) = loopBound.value
            if !handler.ended { context.close(promise: nil) }
        }
    }

    private func timedOut(context: ChannelHandlerContext) {
        timer = nil
        guard !ended else { return }
        logger.notice("HTTP/2 stream reset: no complete request in time", metadata: [
            "remote": "\(context.channel.remoteAddress?.description ?? "?")", "timeout_ms": "\(timeout.nanoseconds / 1_000_000)",
        ])
        context.close(promise: nil)
    }
}
