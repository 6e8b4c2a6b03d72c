// Reproduction: hummingbird-websocket 2.8.1 (with hummingbird 2.28.1, swift-nio 2.101.x, Swift 6.3.1, Linux).
//
// `router.ws(...)` stores `WebSocketHandlerReference.Value(context: context, handler: handler)` in
// `context.webSocket.handler`, a `NIOLockedValueBox` that the context itself references through its `webSocket`
// property: box -> Value -> context -> webSocket -> box. Nothing sets the box back to nil after
// `HTTP1WebSocketUpgradeChannel` read the handler, so the cycle outlives the connection: one request context per
// upgraded WebSocket stays in memory for the life of the process (with BasicWebSocketRequestContext: its
// CoreRequestContextStorage, the `hb.request.id` logger made in `HTTP1WebSocketUpgradeChannel.setup`, the
// EndpointPath box and the handler box, ~660 bytes; more with a context that stores more).
//
// This program serves a WebSocket echo on 127.0.0.1 (ephemeral port) through a router, opens and closes N WebSocket
// connections to it, and counts the request contexts still alive (each context carries a `Tracker` object that
// counts its instances). It exits 1 when more than N/10 contexts outlive their connections.
//
//   swift run -c release repro leak 2000        # the plain context: prints ~2000 live contexts, exits 1
//   swift run -c release repro workaround 2000  # the context clears its handler slot: ~0, exits 0

import Foundation
import Hummingbird
import HummingbirdWSClient
import HummingbirdWebSocket
import Logging
import Synchronization

/// Number of request contexts alive (made and not yet freed).
let liveContexts = Atomic<Int>(0)

/// One per request context; copies of a context share it, so it is freed with the last copy.
final class Tracker: Sendable {
    init() { liveContexts.add(1, ordering: .relaxed) }
    deinit { liveContexts.subtract(1, ordering: .relaxed) }
}

/// `BasicWebSocketRequestContext` plus a tracker.
struct TrackedContext: RequestContext, WebSocketRequestContext {
    var coreContext: CoreRequestContextStorage
    let webSocket: WebSocketHandlerReference<Self>
    let tracker = Tracker()

    init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.webSocket = .init()
    }
}

/// The same context, but the handler reference sits in a slot the WebSocket handler empties once it runs: the
/// context no longer references the box, which breaks the cycle (the workaround).
struct SlotContext: RequestContext, WebSocketRequestContext {
    final class Slot: Sendable {
        let reference = Mutex<WebSocketHandlerReference<SlotContext>?>(WebSocketHandlerReference())
    }
    var coreContext: CoreRequestContextStorage
    let slot = Slot()
    let tracker = Tracker()

    var webSocket: WebSocketHandlerReference<Self> { self.slot.reference.withLock { $0 } ?? WebSocketHandlerReference() }

    init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
    }
}

enum ReproError: Error { case noPort, usage }

/// Serves the echo through a router of `Context`, opens and closes `count` WebSockets, returns the live contexts.
func churn<Context: WebSocketRequestContext & RequestContext>(
    _ context: Context.Type, count: Int, release: @escaping @Sendable (Context) -> Void
) async throws -> Int where Context.Source == ApplicationRequestContextSource {
    var serverLogger = Logger(label: "repro.server")
    serverLogger.logLevel = .error
    let router = Router(context: Context.self)
    router.ws("/") { inbound, outbound, context in
        release(context.requestContext)
        for try await message in inbound.messages(maxSize: 1 << 16) {
            if case .text(let text) = message { try await outbound.write(.text(text)) }
        }
    }
    let port = AsyncStream<Int>.makeStream()
    let app = Application(
        router: Router(),
        server: .http1WebSocketUpgrade(webSocketRouter: router),
        configuration: .init(address: .hostname("127.0.0.1", port: 0)),
        onServerRunning: { channel in port.continuation.yield(channel.localAddress?.port ?? 0) },
        logger: serverLogger
    )
    return try await withThrowingTaskGroup(of: Int?.self) { group in
        group.addTask {
            try await app.run()
            return nil
        }
        var ports = port.stream.makeAsyncIterator()
        guard let listening = await ports.next(), listening > 0 else { throw ReproError.noPort }
        var clientLogger = Logger(label: "repro.client")
        clientLogger.logLevel = .error
        for _ in 0..<count {
            try await WebSocketClient.connect(url: "ws://127.0.0.1:\(listening)/", logger: clientLogger) { _, outbound, _ in
                try await outbound.write(.text("hello"))
            }
        }
        // The server side finishes its close handshake shortly after the client's: wait (at most 5 s) for the
        // count to settle.
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .seconds(5))
        var last = -1
        while clock.now < deadline {
            try await Task.sleep(for: .milliseconds(250))
            let live = liveContexts.load(ordering: .relaxed)
            if live == last { break }
            last = live
        }
        group.cancelAll()
        return liveContexts.load(ordering: .relaxed)
    }
}

let arguments = CommandLine.arguments
let mode = arguments.count > 1 ? arguments[1] : "leak"
let count = arguments.count > 2 ? Int(arguments[2]) ?? 2000 : 2000
let live: Int
switch mode {
case "leak":
    live = try await churn(TrackedContext.self, count: count) { _ in }
case "workaround":
    live = try await churn(SlotContext.self, count: count) { context in context.slot.reference.withLock { $0 = nil } }
default:
    print("usage: repro leak|workaround [connections]")
    exit(2)
}
print("\(mode): \(count) WebSocket connections opened and closed; request contexts still alive: \(live) (expected ~0)")
exit(live > count / 10 ? 1 : 0)
