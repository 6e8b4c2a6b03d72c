import BridgeTestKit
import NIOCore
import NIOPosix
import Synchronization

/// A TCP server on 127.0.0.1 that accepts connections and never says anything (what a connector sees from a port
/// held by something that is not a bridge, or a bridge that hangs), or answers the first bytes with `answer` and
/// closes (a plaintext HTTP server that gets a TLS ClientHello).
enum SilentServer {
    /// What happened to the connections it accepted.
    final class Events: Sendable {
        private let counts = Mutex((accepted: 0, closed: 0))
        private let changes = ChangeSignal()

        func accepted() {
            counts.withLock { $0.accepted += 1 }
            changes.notify()
        }
        func closed() {
            counts.withLock { $0.closed += 1 }
            changes.notify()
        }

        /// Whether a connection was accepted within `timeout`.
        func waitForAccept(timeout: Duration) async throws -> Bool {
            try await wait(timeout) { $0.accepted > 0 }
        }

        /// Whether an accepted connection was closed by its peer within `timeout`.
        func waitForClose(timeout: Duration) async throws -> Bool {
            try await wait(timeout) { $0.closed > 0 }
        }

        private func wait(_ timeout: Duration, until done: ((accepted: Int, closed: Int)) -> Bool) async throws -> Bool {
            await changes.wait(timeout: timeout) { counts.withLock { done($0) } }
        }
    }

    /// Counts a connection when it becomes active and when it goes inactive; answers when told to.
    private final class Watcher: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let events: Events
        let answer: String?
        init(events: Events, answer: String?) {
            self.events = events
            self.answer = answer
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard let answer else { return }
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(channel.allocator.buffer(string: answer))).whenComplete { _ in channel.close(promise: nil) }
        }

        func channelActive(context: ChannelHandlerContext) {
            events.accepted()
            context.fireChannelActive()
        }

        func channelInactive(context: ChannelHandlerContext) {
            events.closed()
            context.fireChannelInactive()
        }
    }

    /// Runs the server for the duration of `body`.
    static func with<T: Sendable>(answer: String? = nil, _ body: (_ port: Int, _ events: Events) async throws -> T) async throws -> T {
        let events = Events()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Watcher(events: events, answer: answer)) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        defer { channel.close(promise: nil) }
        guard let port = channel.localAddress?.port else { throw TestClientError.closed }
        return try await body(port, events)
    }
}
