@testable import BridgeServer
import HTTPTypes
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOEmbedded
import Testing

/// hummingbird-websocket 2.8.1's `router.ws` stores `(context, handler)` in the box of `context.webSocket`, a cycle
/// that kept every upgraded connection's request context (its logger, address and upgrade outcome) for the life of
/// the process (issue 15; notes/upstream-hummingbird-websocket-context-cycle.md). ``WebSocketHandlerSlot`` breaks it.
@Suite struct WebSocketContextCycleTests {
    /// Holds the context's upgrade outcome weakly: it is freed with the context's last copy.
    final class Watch {
        weak var outcome: UpgradeOutcome?
        init(_ outcome: UpgradeOutcome) { self.outcome = outcome }
    }

    /// Routes one upgrade request through a `ws` route as `HTTP1WebSocketUpgradeChannel` does (the route stores the
    /// handler in the context), optionally releases the context's handler reference as the bridge's connection
    /// handler does, and drops the context.
    static func routeOnce(release: Bool) async throws -> Watch {
        let router = Router(context: BridgeWebSocketRequestContext.self)
        router.ws("/") { _, _, _ in }
        let responder = router.buildResponder()
        let context = BridgeWebSocketRequestContext(
            source: .init(channel: EmbeddedChannel(), logger: Logger(label: "test")))
        let head = HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1", path: "/")
        let response = try await responder.respond(to: Request(head: head, body: .init(buffer: .init())), context: context)
        #expect(response.status == .ok)
        if release { context.releaseHandlerReference() }
        return Watch(context.upgradeOutcome)
    }

    @Test func releasingTheHandlerReferenceFreesTheContext() async throws {
        let watch = try await Self.routeOnce(release: true)
        #expect(watch.outcome == nil, "the request context outlived its connection")
    }

    /// The upstream cycle itself: when this fails, hummingbird-websocket frees the context on its own and
    /// ``WebSocketHandlerSlot`` can go.
    @Test func withoutTheReleaseHummingbirdWebSocketKeepsTheContext() async throws {
        let watch = try await Self.routeOnce(release: false)
        #expect(watch.outcome != nil, "hummingbird-websocket no longer keeps the context: drop WebSocketHandlerSlot")
    }
}
