import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing
@testable import BridgeServer

/// The keepalive pings on the event loop (``WebSocketKeepalive``), timed by the embedded loop's manual time.
@Suite("Keepalive pings without a task", .tags(.unit))
struct KeepaliveTimerTests {
    private func connected() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
        try channel.pipeline.syncOperations.addHandler(WebSocketKeepalive(period: .seconds(30)))
        return channel
    }

    @Test("a ping every period while pongs come back; the pong passes on to the WebSocket handler")
    func answered() throws {
        let channel = try connected()
        defer { _ = try? channel.finish() }
        #expect(try channel.readOutbound(as: WebSocketFrame.self) == nil)
        for _ in 0..<3 {
            channel.embeddedEventLoop.advanceTime(by: .seconds(30))
            let ping = try #require(try channel.readOutbound(as: WebSocketFrame.self))
            #expect(ping.opcode == .ping)
            try channel.writeInbound(WebSocketFrame(fin: true, opcode: .pong, data: ping.data))
            #expect(try channel.readInbound(as: WebSocketFrame.self)?.opcode == .pong)
        }
        #expect(channel.isActive)
    }

    @Test("a ping not answered by the next period: close 1001 'Ping timeout', and the connection is closed")
    func unanswered() throws {
        let channel = try connected()
        channel.embeddedEventLoop.advanceTime(by: .seconds(30))
        let ping = try #require(try channel.readOutbound(as: WebSocketFrame.self))
        // A pong with another payload does not count.
        var other = ping.data
        other.setInteger(~(other.getInteger(at: 0, as: UInt8.self) ?? 0), at: 0)
        try channel.writeInbound(WebSocketFrame(fin: true, opcode: .pong, data: other))
        channel.embeddedEventLoop.advanceTime(by: .seconds(30))
        let close = try #require(try channel.readOutbound(as: WebSocketFrame.self))
        #expect(close.opcode == .connectionClose)
        var data = close.data
        #expect(data.readWebSocketErrorCode() == .goingAway)
        #expect(data.readString(length: data.readableBytes) == "Ping timeout")
        #expect(!channel.isActive)
    }
}
