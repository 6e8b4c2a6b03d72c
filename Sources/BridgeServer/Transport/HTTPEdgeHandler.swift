import BridgeHTTP
import HTTPTypes
import NIOCore
import NIOHTTP1

/// The HTTP/1.x edges of a connection (issue 26), right after NIO's request decoder and before the WebSocket upgrade
/// and Hummingbird, so that every request, the first included, gets an answer RFC 9110/9112 asks for and nothing
/// waits in silence.
///
/// - a request the decoder cannot parse gets its status at once and a close: `431` for a head over the size limits,
///   `501` for an unknown method (or a request line that starts with no method at all), `505` for an HTTP version
///   other than 1.x (the HTTP/2 preface too where it reaches this pipeline: over TLS without ALPN `h2`; in clear
///   ``HTTP2ProtocolSelector`` takes it to HTTP/2 first), `400` for anything else (bare LF,
///   obs-fold, conflicting lengths, NUL...); after the answer to a request went out, a parse error in the rest of it
///   (a bad chunk size) only closes: one response per request;
/// - `Host` missing (HTTP/1.1) or repeated: `400` (RFC 9112 §3.2); an absolute-form target's authority replaces
///   `Host` (§3.2.2); `CONNECT`: `501` and a close; a body over
///   `maxBodySize` (by `Content-Length`, or as it arrives chunked): `413` and a close;
/// - an `Upgrade` other than `websocket` (`h2c`...) is removed, and the request answered as if it were not there; a
///   WebSocket handshake without a valid `Sec-WebSocket-Key` gets `400`, one with a version other than 13 gets `426`
///   with `Sec-WebSocket-Version: 13` (RFC 6455 §4.2.2);
/// - `HEAD` is answered as `GET` without the body; HTTP/1.0 closes after its answer unless it asked for keep-alive
///   (and always with `Transfer-Encoding`, RFC 9112 §6.1); `Expect: 100-continue` gets `100 Continue` before the body is
///   read, any other expectation `417`;
/// - on a connection admitted on probation (``ConnectionGuard/probationRefusal``), a request other than a WebSocket
///   upgrade: `503 server_busy` and a close.
///
/// It also tells ``ConnectionGuard`` when a request has fully arrived (its time bound covers the head and the body),
/// and is removed when the connection becomes a WebSocket.
final class HTTPEdgeHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let maxBodySize: Int
    private weak var connectionGuard: ConnectionGuard?
    /// A request's head came and its end has not.
    private var inRequest = false
    /// The request in progress: dropped (answered here) or passed on, its answer started, its body, HEAD or not.
    private var request: RequestInProgress
    /// The connection closes after the answer in progress (HTTP/1.0 without keep-alive).
    private var closeAfterResponse = false
    /// The connection is closing (an answer of ours went out): nothing more is read or answered.
    private var closing = false

    init(maxBodySize: Int, connectionGuard: ConnectionGuard?) {
        self.maxBodySize = maxBodySize
        self.request = RequestInProgress(maxBodySize: maxBodySize)
        self.connectionGuard = connectionGuard
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing else { return }
        switch unwrapInboundIn(data) {
        case .head(var head):
            inRequest = true
            request.start()
            closeAfterResponse = false
            if let refusal = refusal(for: head) {
                request.drop()
                return answer(context, refusal.status, headers: refusal.headers)
            }
            if let busy = connectionGuard?.probationRefusal, !Self.isWebSocketUpgrade(head) {
                // A connection on a reserve place that does not ask for a WebSocket (ConnectionAdmission).
                request.drop()
                var headers = HTTPHeaders()
                for field in busy.headers { headers.add(name: field.name.rawName, value: field.value) }
                headers.add(name: "content-type", value: "application/json")
                headers.add(name: "cache-control", value: "no-store")
                return answer(context, HTTPResponseStatus(statusCode: busy.status.code), headers: headers, body: busy.bodyText)
            }
            adjust(&head, context)
            context.fireChannelRead(wrapInboundOut(.head(head)))
        case .body(let body):
            switch request.body(body.readableBytes) {
            case .pass: context.fireChannelRead(data)
            case .drop: return
            case .refuseTooLarge: answer(context, .payloadTooLarge)
            case .closeTooLarge:
                closing = true
                context.close(promise: nil)
            }
        case .end:
            inRequest = false
            connectionGuard?.requestEnded()
            guard !request.dropping else { return }
            context.fireChannelRead(data)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let error = error as? HTTPParserError else { return context.fireErrorCaught(error) }
        guard !closing else { return }
        if request.responded {
            // The request was answered already: one response per request.
            closing = true
            context.close(promise: nil)
            return
        }
        answer(context, Self.status(for: error))
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard !closing else {
            promise?.fail(ChannelError.outputClosed)
            return
        }
        switch unwrapOutboundIn(data) {
        case .head(var head):
            request.answerStarted(final: head.status.code >= 200 || head.status == .switchingProtocols)
            if closeAfterResponse, head.status.code >= 200 {
                head.headers.replaceOrAdd(name: "connection", value: "close")
            }
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        case .body:
            if request.isHead {
                promise?.succeed()
            } else {
                context.write(data, promise: promise)
            }
        case .end:
            context.write(data, promise: promise)
            if closeAfterResponse {
                closing = true
                let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
                context.flush()
                promise?.futureResult.whenComplete { _ in loopBound.value.close(promise: nil) }
                if promise == nil { context.close(promise: nil) }
            }
        }
    }

    /// The status and headers a request head is refused with here, if it is.
    private func refusal(for head: HTTPRequestHead) -> (status: HTTPResponseStatus, headers: HTTPHeaders)? {
        if head.version.major != 1 { return (.httpVersionNotSupported, [:]) }
        let hosts = head.headers["host"].count
        if hosts > 1 || (hosts == 0 && head.version.minor >= 1) { return (.badRequest, [:]) }
        if head.method == .CONNECT { return (.notImplemented, [:]) }
        if let length = head.headers.first(name: "content-length").flatMap({ Int($0) }), length > maxBodySize {
            return (.payloadTooLarge, [:])
        }
        if let expect = head.headers.first(name: "expect"), expect.lowercased() != "100-continue" {
            return (.expectationFailed, [:])
        }
        if Self.isWebSocketUpgrade(head) {
            let keys = head.headers["sec-websocket-key"]
            guard keys.count == 1, let key = keys.first, Self.isWebSocketKey(key) else { return (.badRequest, [:]) }
            if head.headers["sec-websocket-version"] != ["13"] {
                return (.upgradeRequired, ["sec-websocket-version": "13"])
            }
        }
        return nil
    }

    /// Changes what the request head says before it goes on, and answers `100 Continue`.
    private func adjust(_ head: inout HTTPRequestHead, _ context: ChannelHandlerContext) {
        Self.takingTheTargetsAuthority(&head)
        if head.method == .HEAD {
            head.method = .GET
            request.isHead = true
        }
        // An Upgrade the bridge does not take is not there (RFC 9110 §7.8: a server may ignore it).
        let upgrades = head.headers["upgrade"]
        if !upgrades.isEmpty, !upgrades.contains(where: { $0.lowercased().contains("websocket") }) {
            head.headers.remove(name: "upgrade")
            let tokens = head.headers[canonicalForm: "connection"].map { String($0) }.filter { $0.lowercased() != "upgrade" }
            head.headers.remove(name: "connection")
            if !tokens.isEmpty { head.headers.add(name: "connection", value: tokens.joined(separator: ", ")) }
        }
        if head.version == .http1_0 {
            let tokens = head.headers[canonicalForm: "connection"].map { $0.lowercased() }
            if !tokens.contains("keep-alive") || head.headers.contains(name: "transfer-encoding") {
                closeAfterResponse = true
                // Hummingbird ends the connection after a request that says `Connection: close`.
                head.headers.replaceOrAdd(name: "connection", value: "close")
            }
        }
        if head.version == .http1_1, head.headers.first(name: "expect")?.lowercased() == "100-continue" {
            head.headers.remove(name: "expect")
            context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .continue))), promise: nil)
        }
    }

    /// An absolute-form target (`GET http://host/path`) becomes its path, and its authority the `Host` (RFC 9112
    /// §3.2.2: the server ignores the received `Host` then), so that the checks on `Host` (the loopback-only routes,
    /// browsers' host names) judge the authority the request names (issue 26.6: `/metrics` answered
    /// `GET http://evil.example/metrics` with `Host: 127.0.0.1`).
    static func takingTheTargetsAuthority(_ head: inout HTTPRequestHead) {
        let uri = head.uri
        let lowered = uri.prefix(8).lowercased()
        let schemeLength = lowered.hasPrefix("http://") ? 7 : lowered.hasPrefix("https://") ? 8 : 0
        guard schemeLength > 0 else { return }
        let rest = uri.dropFirst(schemeLength)
        let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        let authority = String(rest[..<end]).split(separator: "@").last.map(String.init) ?? ""
        var path = String(rest[end...])
        if !path.hasPrefix("/") { path = "/" + path }
        head.uri = path
        head.headers.replaceOrAdd(name: "host", value: authority)
    }

    /// Whether `head` asks for a WebSocket (an `Upgrade` naming `websocket`).
    static func isWebSocketUpgrade(_ head: HTTPRequestHead) -> Bool {
        head.headers["upgrade"].contains(where: { $0.lowercased().contains("websocket") })
    }

    /// Writes `status` with `body` (empty by default) and `Connection: close`, then closes.
    private func answer(
        _ context: ChannelHandlerContext, _ status: HTTPResponseStatus, headers extra: HTTPHeaders = [:], body: String = ""
    ) {
        guard !closing else { return }
        var headers = extra
        headers.add(name: "connection", value: "close")
        headers.add(name: "content-length", value: "\(body.utf8.count)")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        if !body.isEmpty {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: body)))), promise: nil)
        }
        request.answerStarted(final: true)
        closing = true
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in loopBound.value.close(promise: nil) }
    }

    /// The status for a request the decoder could not parse.
    static func status(for error: HTTPParserError) -> HTTPResponseStatus {
        switch error {
        case .headerOverflow: .requestHeaderFieldsTooLarge
        case .invalidMethod: .notImplemented
        // llhttp pauses at the HTTP/2 preface (`PRI * HTTP/2.0`), the only pause the bridge's decoder meets.
        case .invalidVersion, .paused: .httpVersionNotSupported
        default: .badRequest
        }
    }

    /// Whether `key` is what RFC 6455 §4.1 says: 16 bytes in base64 (24 characters ending in `==`).
    static func isWebSocketKey(_ key: String) -> Bool {
        let trimmed = key.utf8.drop(while: { $0 == 0x20 || $0 == 0x09 }).reversed().drop(while: { $0 == 0x20 || $0 == 0x09 })
            .reversed()
        let bytes = Array(trimmed)
        guard bytes.count == 24, bytes[22] == UInt8(ascii: "="), bytes[23] == UInt8(ascii: "=") else { return false }
        return bytes.dropLast(2).allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"):
                true
            default:
                false
            }
        }
    }
}
