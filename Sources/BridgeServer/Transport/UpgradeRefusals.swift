import BridgeHTTP
import BridgeTime
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOCore
import NIOHTTPTypes
import Synchronization

/// Refused WebSocket upgrades keep their HTTP status and JSON body.
///
/// The upgrade route's own response to a refused upgrade does not reach the peer: NIO's upgrader only learns "not
/// upgraded", and ``BridgeUpgradeChannel`` (like Hummingbird's channel it follows) writes an empty `400` on that
/// path, through the handlers of `HTTP1Channel.Configuration.additionalChannelHandlers` that it installs there after
/// the HTTP codec. So the upgrade check records its real answer here under the connection's channel, and
/// ``RefusalResponseHandler`` (one of those additional handlers) answers with it in place of the `400`: typed HTTP
/// parts, no bytes matched.
final class UpgradeRefusals: Sendable {
    private let pending = Mutex<[ObjectIdentifier: JSONErrorResponse]>([:])
    /// The clock whose wall time a refusal's `Date` header gives.
    let clock: any BridgeClock

    /// Refusals dated by `clock`.
    init(clock: any BridgeClock = ContinuousClock()) {
        self.clock = clock
    }

    /// Remembers the answer for the upgrade on `channel`.
    func record(_ refusal: JSONErrorResponse, for channel: ObjectIdentifier) {
        pending.withLock { $0[channel] = refusal }
    }

    /// Takes the answer recorded for `channel`, if any.
    func take(_ channel: ObjectIdentifier) -> JSONErrorResponse? {
        pending.withLock { $0.removeValue(forKey: channel) }
    }
}

/// Answers a refused upgrade with what the upgrade check recorded in ``UpgradeRefusals``: the first response on a
/// connection with a recorded refusal is replaced, head and body, by it (`Connection: close` kept, and a `Date`, which
/// the upgrade's own `400` lacked).
final class RefusalResponseHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let refusals: UpgradeRefusals
    /// Replacing the current response: its own head and body parts are dropped until its end.
    private var replacing = false

    init(refusals: UpgradeRefusals) {
        self.refusals = refusals
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head:
            guard let refusal = refusals.take(ObjectIdentifier(context.channel)) else {
                context.write(data, promise: promise)
                return
            }
            replacing = true
            context.write(wrapOutboundOut(.head(refusal.head(closing: true, date: refusals.clock.wallTime))), promise: nil)
            context.write(wrapOutboundOut(.body(refusal.body)), promise: promise)
        case .body:
            if replacing { promise?.succeed() } else { context.write(data, promise: promise) }
        case .end:
            replacing = false
            context.write(data, promise: promise)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        _ = refusals.take(ObjectIdentifier(context.channel))
    }
}

extension UpgradeRefusals {
    /// Records `refusal` for the upgrade in `context` and returns it, to throw.
    func refuse(_ refusal: JSONErrorResponse, on context: BridgeWebSocketRequestContext) -> JSONErrorResponse {
        record(refusal, for: context.channelID)
        return refusal
    }
}
