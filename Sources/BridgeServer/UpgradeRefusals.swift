import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import Synchronization

/// Refused WebSocket upgrades keep their HTTP status and JSON body.
///
/// HummingbirdWebSocket answers every refused upgrade with `400 Bad Request` and no body, whatever the upgrade check
/// decided. The check records its real answer here under the connection's channel, and ``RefusalRewriter`` (first in
/// that channel's pipeline) swaps the library's 400 for it on the way out.
final class UpgradeRefusals: Sendable {
    private let pending = Mutex<[ObjectIdentifier: JSONErrorResponse]>([:])

    /// Remembers the answer for the upgrade on `channel`.
    func record(_ refusal: JSONErrorResponse, for channel: ObjectIdentifier) {
        pending.withLock { $0[channel] = refusal }
    }

    /// Takes the answer recorded for `channel`, if any.
    func take(_ channel: ObjectIdentifier) -> JSONErrorResponse? {
        pending.withLock { $0.removeValue(forKey: channel) }
    }

    /// The HTTP/1.1 bytes of a refusal (the connection closes after it).
    static func bytes(of refusal: JSONErrorResponse) -> String {
        let body = refusal.bodyText
        var head = "HTTP/1.1 \(refusal.status.code) \(refusal.status.reasonPhrase)\r\n"
        head += "Content-Type: application/json\r\nCache-Control: no-store\r\nConnection: close\r\n"
        head += "Content-Length: \(body.utf8.count)\r\n"
        for field in refusal.headers where field.name != .contentType && field.name != .cacheControl {
            head += "\(field.name.rawName): \(field.value)\r\n"
        }
        return head + "\r\n" + body
    }
}

/// Swaps HummingbirdWebSocket's bodiless `400` for a refused upgrade's recorded answer.
final class RefusalRewriter: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let refusals: UpgradeRefusals
    private let channel: ObjectIdentifier
    private static let badRequest = Array("HTTP/1.1 400".utf8)

    init(refusals: UpgradeRefusals, channel: ObjectIdentifier) {
        self.refusals = refusals
        self.channel = channel
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let buffer = unwrapOutboundIn(data)
        if buffer.readableBytesView.starts(with: Self.badRequest), let refusal = refusals.take(channel) {
            // The library writes its head and an empty end; the head is replaced by the whole answer.
            let replacement = context.channel.allocator.buffer(string: UpgradeRefusals.bytes(of: refusal))
            context.write(wrapOutboundOut(replacement), promise: promise)
            return
        }
        context.write(data, promise: promise)
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        _ = refusals.take(channel)
        context.close(mode: mode, promise: promise)
    }
}

/// The HTTP/1.1 + WebSocket child channel with a ``RefusalRewriter`` and a ``FlushCoalescer`` in front.
struct RefusalRewritingChannel: ServerChildChannel {
    typealias Value = HTTP1WebSocketUpgradeChannel.Value

    let inner: HTTP1WebSocketUpgradeChannel
    let refusals: UpgradeRefusals

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        do {
            let rewriter = RefusalRewriter(refusals: refusals, channel: ObjectIdentifier(channel))
            try channel.pipeline.syncOperations.addHandler(rewriter, position: .first)
            try channel.pipeline.syncOperations.addHandler(FlushCoalescer(), position: .first)
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return inner.setup(channel: channel, logger: logger)
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}

extension HTTPServerBuilder {
    /// HTTP/1.1 with WebSocket upgrade, refused upgrades answered with what the check decided (see ``UpgradeRefusals``).
    static func http1WebSocketUpgrade<Context: WebSocketRequestContext>(
        webSocketRouter: Router<Context>,
        configuration: HTTP1WebSocketUpgradeChannel.Configuration,
        refusals: UpgradeRefusals
    ) -> HTTPServerBuilder {
        let webSocketResponder = webSocketRouter.buildResponder()
        return .init { responder in
            RefusalRewritingChannel(
                inner: HTTP1WebSocketUpgradeChannel(responder: responder, webSocketResponder: webSocketResponder, configuration: configuration),
                refusals: refusals)
        }
    }
}

extension UpgradeRefusals {
    /// Records `refusal` for the upgrade in `context` and returns it, to throw.
    func refuse(_ refusal: JSONErrorResponse, on context: BridgeWebSocketRequestContext) -> JSONErrorResponse {
        record(refusal, for: context.channelID)
        return refusal
    }
}

extension JSONErrorResponse {
    /// The answer for an upgrade authorizer's denial; a message `"code: text"` (as from
    /// ``BridgePairing/Authenticator/upgradeAuthorizer(allowedOrigins:)``) becomes `{"error": code, "message": text}`.
    init(denial status: Int, _ message: String) {
        var code = "upgrade_refused"
        var text = message
        if let colon = message.range(of: ": "), !message[..<colon.lowerBound].contains(" "), !message[..<colon.lowerBound].isEmpty {
            code = String(message[..<colon.lowerBound])
            text = String(message[colon.upperBound...])
        }
        self.init(status: HTTPResponse.Status(code: status), code: code, message: text)
    }
}
