import BridgeRPC
import NIOCore
import NIOHTTP1

extension WebSocketConnector {
    /// An HTTP answer other than `101 Switching Protocols` to the upgrade request.
    struct Refusal: Sendable, Hashable {
        /// The status code.
        var status: Int
        /// The body (at most ``RefusalCollector/maximumBody`` bytes of it).
        var body: [UInt8]
        /// The bridge's `DPoP-Nonce` header, if it sent one (RFC 9449 §8).
        var dpopNonce: String? = nil
        /// The bridge's `Date` header, if it sent one: its clock, to correct a DPoP proof's `iat` by.
        var date: String? = nil

        /// The bridge's `{"error":…,"message":…}`, when the body is that JSON.
        var bridgeError: (error: String?, message: String?) {
            guard let value = try? JSONValue(parsing: String(decoding: body, as: UTF8.self)) else { return (nil, nil) }
            return (value["error"]?.stringValue, value["message"]?.stringValue)
        }
    }

    /// Collects the response the upgrade handler passed on when the server did not switch protocols: its head
    /// and up to 64 KiB of body, complete at the response's end or when the connection closes.
    final class RefusalCollector: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPClientResponsePart

        /// The most body kept; a bridge's JSON error is far smaller.
        static let maximumBody = 64 * 1024

        private let promise: EventLoopPromise<Refusal>
        private var status: Int?
        private var dpopNonce: String?
        private var date: String?
        private var body: [UInt8] = []
        private var completed = false

        init(promise: EventLoopPromise<Refusal>) {
            self.promise = promise
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                status = Int(head.status.code)
                dpopNonce = head.headers.first(name: "DPoP-Nonce")
                date = head.headers.first(name: "Date")
            case .body(let buffer):
                let room = RefusalCollector.maximumBody - body.count
                if room > 0 { body += buffer.readableBytesView.prefix(room) }
            case .end:
                complete(context: context)
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            complete(context: context)
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            complete(context: context)
            context.fireErrorCaught(error)
        }

        func handlerRemoved(context: ChannelHandlerContext) {
            complete(context: context)
        }

        private func complete(context: ChannelHandlerContext) {
            guard !completed else { return }
            completed = true
            if let status {
                promise.succeed(Refusal(status: status, body: body, dpopNonce: dpopNonce, date: date))
            } else {
                promise.fail(WebSocketConnectorError.protocolViolation("the upgrade was answered without a status line"))
            }
            context.close(promise: nil)
        }
    }
}
