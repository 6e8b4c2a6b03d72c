import NIOCore
import NIOWebSocket

/// A WebSocket connection's channel as a ``FrameWriter``: frames go into the pipeline from its tail, through
/// ``WebSocketConnectionHandler`` to the WebSocket frame encoder, in the order they are written; the handler's own
/// frames (pongs, the close) go through the same event loop.
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
