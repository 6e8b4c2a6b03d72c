import HummingbirdWebSocket
import Synchronization

/// Holds a request context's `WebSocketHandlerReference` until the upgraded connection releases it.
///
/// hummingbird-websocket 2.8.1's `router.ws` stores `(context, handler)` in the box of `context.webSocket`, so the box
/// references the context that references the box; nothing empties the box after the upgrade read it, and the cycle
/// outlived every WebSocket connection (its logger, SocketAddress and upgrade outcome: ~0.7 KB each, measured in
/// notes/soak-connection-churn.md). Reading the reference through this slot, and releasing it once the connection
/// runs, leaves the box referenced only by the cycle's own `Value`, which the connection's handler frees with it.
final class WebSocketHandlerSlot<Context: WebSocketRequestContext>: Sendable {
    private let state = Mutex<WebSocketHandlerReference<Context>?>(WebSocketHandlerReference())

    /// The reference Hummingbird stores the handler in; an empty one (that nothing reads) once released.
    var reference: WebSocketHandlerReference<Context> {
        state.withLock { $0 } ?? WebSocketHandlerReference()
    }

    /// Drops the slot's reference (idempotent).
    func release() {
        state.withLock { $0 = nil }
    }
}
