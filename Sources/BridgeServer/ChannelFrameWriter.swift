import NIOCore
import NIOWebSocket
import Synchronization

/// A WebSocket connection's channel as a ``FrameWriter``: frames go into the pipeline from its tail, past the
/// `NIOAsyncChannel` handler (which only forwards outbound writes) to the WebSocket frame encoder, in the order they
/// are written; the WebSocket handler's own frames (pongs, pings, the close) go through the same event loop.
struct ChannelFrameWriter: FrameWriter {
    let channel: any Channel

    func execute(_ body: @escaping @Sendable () -> Void) {
        channel.eventLoop.execute(body)
    }

    func write(_ frames: [ByteBuffer], completed: @escaping @Sendable () -> Void) {
        guard let last = frames.indices.last else { return completed() }
        let promise = channel.eventLoop.makePromise(of: Void.self)
        for index in frames.indices {
            let frame = WebSocketFrame(fin: true, opcode: .text, data: frames[index])
            channel.write(frame, promise: index == last ? promise : nil)
        }
        channel.flush()
        promise.futureResult.whenComplete { _ in completed() }
    }

    func close() {
        channel.close(promise: nil)
    }
}

extension ChannelFrameWriter {
    /// The accepted connections' channels from accept until their WebSocket handler takes its own (by the request
    /// context's `channelID`): Hummingbird gives the upgraded handler no channel.
    static let channels = Channels()

    /// Channels by identity, each held until taken or closed.
    final class Channels: Sendable {
        private let channels = Mutex<[ObjectIdentifier: any Channel]>([:])

        /// Holds `channel` until it is taken (its close takes it: ``BridgeChildChannel``).
        func register(_ channel: any Channel) {
            channels.withLock { $0[ObjectIdentifier(channel)] = channel }
        }

        /// The channel registered as `key`, no longer held.
        func take(_ key: ObjectIdentifier) -> (any Channel)? {
            channels.withLock { $0.removeValue(forKey: key) }
        }
    }
}
