import HummingbirdWebSocket
import NIOCore

/// What a ``ConnectionCloser`` closes: a WebSocket connection (``WebSocketCloseTarget``), or a test's stand-in.
protocol ConnectionCloseTarget: Sendable {
    /// Where the close timeout runs.
    var eventLoop: any EventLoop { get }
    /// Sends the close frame (the WebSocket handler then expects the peer's answer).
    func sendClose(_ kind: OutboundFrame.CloseKind, _ reason: String) async throws
    /// Closes the connection at once.
    func closeConnection()
}

/// A WebSocket connection as a ``ConnectionCloseTarget``: the close goes through its WebSocket handler's writer, the
/// timeout closes its channel.
struct WebSocketCloseTarget: ConnectionCloseTarget {
    let outbound: WebSocketOutboundWriter
    let channel: any Channel

    var eventLoop: any EventLoop { channel.eventLoop }

    func sendClose(_ kind: OutboundFrame.CloseKind, _ reason: String) async throws {
        try await outbound.close(kind.code, reason: String(reason.utf8.prefix(120)) ?? "closing")
    }

    func closeConnection() {
        channel.close(promise: nil)
    }
}
