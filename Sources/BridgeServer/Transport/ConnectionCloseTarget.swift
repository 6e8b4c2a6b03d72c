import NIOCore
import NIOWebSocket

/// What a ``ConnectionCloser`` closes: a WebSocket connection (``ChannelCloseTarget``), or a test's stand-in.
protocol ConnectionCloseTarget: Sendable {
    /// Where the close timeout runs.
    var eventLoop: any EventLoop { get }
    /// Sends the close frame (the WebSocket handler then expects the peer's answer).
    func sendClose(_ kind: OutboundFrame.CloseKind, _ reason: String) async throws
    /// Closes the connection at once.
    func closeConnection()
    /// The close was sent and its timeout armed: the connection now waits for the peer's answer (a test waits for this
    /// instead of looking again and again).
    func closeTimeoutArmed()
}

extension ConnectionCloseTarget {
    /// Nothing to do: only a test's target listens.
    func closeTimeoutArmed() {}
}

/// A WebSocket connection as a ``ConnectionCloseTarget``: the close frame goes into its channel (its
/// ``WebSocketConnectionHandler`` then takes the peer's answering close as the end), the timeout closes the channel.
struct ChannelCloseTarget: ConnectionCloseTarget {
    let channel: any Channel

    var eventLoop: any EventLoop { channel.eventLoop }

    func sendClose(_ kind: OutboundFrame.CloseKind, _ reason: String) async throws {
        let reason = String(reason.utf8.prefix(120)) ?? "closing"
        var payload = channel.allocator.buffer(capacity: 2 + reason.utf8.count)
        payload.write(webSocketErrorCode: kind.code)
        payload.writeString(reason)
        try await channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .connectionClose, data: payload))
    }

    func closeConnection() {
        channel.close(promise: nil)
    }
}
