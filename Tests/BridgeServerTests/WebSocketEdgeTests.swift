import BridgeTestKit
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing
@testable import BridgeServer

/// The WebSocket handler's protocol edges (issue 26.4, 26.5, 27.4) on an embedded channel: UTF-8 checked as fragments
/// arrive (1007), nothing after the bridge's close, bounded fragments, and reads paused while the client does not
/// take what is written to it.
@Suite("WebSocket edges of the connection handler", .tags(.unit))
struct WebSocketEdgeTests {
    /// Counts the reads the handler passes towards the socket.
    final class ReadCounter: ChannelOutboundHandler {
        typealias OutboundIn = Any
        var reads = 0
        func read(context: ChannelHandlerContext) {
            reads += 1
            context.read()
        }
    }

    struct Harness {
        let channel: EmbeddedChannel
        let messages: ClientMessages
        let reads: ReadCounter

        /// A masked frame from the client.
        func send(_ opcode: WebSocketOpcode, _ bytes: [UInt8], fin: Bool = true) throws {
            let key: WebSocketMaskingKey = [0x12, 0x34, 0x56, 0x78]
            var data = channel.allocator.buffer(bytes: bytes)
            data.webSocketMask(key)
            try channel.writeInbound(WebSocketFrame(fin: fin, opcode: opcode, maskKey: key, data: data))
        }

        /// The frames written to the client so far.
        func written() throws -> [WebSocketFrame] {
            var frames: [WebSocketFrame] = []
            while let frame = try channel.readOutbound(as: WebSocketFrame.self) { frames.append(frame) }
            return frames
        }

        /// The messages delivered, once the handler is done (it finishes them).
        func delivered() async -> [String] {
            await Self.delivered(messages)
        }

        /// The text messages in `messages`, which this finishes first.
        static func delivered(_ messages: ClientMessages) async -> [String] {
            messages.finish()
            var texts: [String] = []
            for await message in messages {
                if case .text(let bytes) = message { texts.append(String(buffer: bytes)) }
            }
            return texts
        }
    }

    static func harness(maxMessageSize: Int = 1 << 20) throws -> Harness {
        let channel = EmbeddedChannel()
        let messages = ClientMessages()
        let reads = ReadCounter()
        try channel.pipeline.syncOperations.addHandler(reads)
        try channel.pipeline.syncOperations.addHandler(WebSocketConnectionHandler(
            messages: messages, maxMessageSize: maxMessageSize, closeTimeout: .seconds(15)))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
        return Harness(channel: channel, messages: messages, reads: reads)
    }

    static func closeCode(_ frame: WebSocketFrame?) -> WebSocketErrorCode? {
        guard let frame, frame.opcode == .connectionClose else { return nil }
        var data = frame.data
        return data.readWebSocketErrorCode()
    }

    @Test("invalid UTF-8 in a text frame closes with 1007 and is not delivered",
          arguments: [[0xFF], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0x61, 0xE2, 0x82]] as [[UInt8]])
    func invalidText(bytes: [UInt8]) async throws {
        let harness = try Self.harness()
        try harness.send(.text, Array("{\"x\":\"".utf8) + bytes)
        let frames = try harness.written()
        #expect(frames.count == 1)
        #expect(Self.closeCode(frames.first) == .dataInconsistentWithMessage)
        #expect(await harness.delivered().isEmpty)
    }

    @Test("a fragmented text message fails at the fragment holding invalid UTF-8, before it is whole")
    func invalidFragment() async throws {
        let harness = try Self.harness()
        try harness.send(.text, Array("hello".utf8), fin: false)
        #expect(try harness.written().isEmpty)
        try harness.send(.continuation, [0x20, 0xCE, 0xBA, 0xF4, 0x90, 0x80, 0x80, 0x20], fin: false)
        #expect(Self.closeCode(try harness.written().first) == .dataInconsistentWithMessage)
        try harness.send(.continuation, Array("world".utf8), fin: true)
        #expect(try harness.written().isEmpty)
        #expect(await harness.delivered().isEmpty)
    }

    @Test("a character split across fragments is fine; one cut off at the end of the message is not")
    func splitCharacter() async throws {
        let harness = try Self.harness()
        // κόσμε, with the 3-byte ό split over two fragments.
        let text = Array("κόσμε".utf8)
        try harness.send(.text, Array(text[0..<3]), fin: false)
        try harness.send(.continuation, Array(text[3...]), fin: true)
        #expect(try harness.written().isEmpty)
        try harness.send(.text, [0x61, 0xE2, 0x82], fin: false)
        #expect(try harness.written().isEmpty)
        try harness.send(.continuation, [], fin: true)
        #expect(Self.closeCode(try harness.written().first) == .dataInconsistentWithMessage)
        #expect(await harness.delivered() == ["κόσμε"])
    }

    @Test("a binary message is not checked for UTF-8")
    func binaryNotChecked() async throws {
        let harness = try Self.harness()
        try harness.send(.binary, [0xFF, 0xFE])
        #expect(try harness.written().isEmpty)
    }

    @Test("after the bridge's close (1002), an answer to an earlier message is not sent")
    func nothingAfterClose() async throws {
        let harness = try Self.harness()
        try harness.send(.text, Array("{}".utf8))
        // A reserved opcode: the handler closes with 1002.
        try harness.send(WebSocketOpcode(encodedWebSocketOpcode: 0x3)!, [])
        let close = try harness.written()
        #expect(close.count == 1 && Self.closeCode(close.first) == .protocolError)
        // The hub answers the first message late: it must not follow the close.
        let promise = harness.channel.eventLoop.makePromise(of: Void.self)
        harness.channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: "{\"id\":1}")), promise: promise)
        #expect(try harness.written().isEmpty)
        // A ping from the peer after the close is not answered either.
        try harness.send(.ping, [1, 2])
        #expect(try harness.written().isEmpty)
        #expect(await harness.delivered() == ["{}"])
    }

    @Test("a message in more than the most fragments is closed with 1009")
    func fragmentBound() async throws {
        // This loop takes a second of CPU, so it runs on a thread of its own: the bridges other tests run at the same
        // time need the cooperative pool's two threads (docs/testing.md, "CPU-heavy tests"). The thread also makes the
        // EmbeddedChannel, which may only be used from the thread that made it (a yield in the loop had moved it).
        let (messages, quietBefore, close) = try await onOwnThread { () throws -> (ClientMessages, Bool, WebSocketErrorCode?) in
            let harness = try Self.harness()
            try harness.send(.text, Array("a".utf8), fin: false)
            for _ in 1..<WebSocketConnectionHandler.maxFragments {
                try harness.send(.continuation, Array("a".utf8), fin: false)
            }
            let quiet = try harness.written().isEmpty
            try harness.send(.continuation, Array("a".utf8), fin: false)
            return (harness.messages, quiet, Self.closeCode(try harness.written().first))
        }
        #expect(quietBefore)
        #expect(close == .messageTooLarge)
        #expect(await Harness.delivered(messages).isEmpty)
    }

    @Test("while the client does not take what is written, reads pause and pings get one pong, the latest")
    func pausedWhileUnwritable() async throws {
        let harness = try Self.harness()
        try harness.send(.ping, [1])
        #expect(try harness.written().map(\.opcode) == [.pong])
        harness.channel.isWritable = false
        harness.channel.pipeline.fireChannelWritabilityChanged()
        let before = harness.reads.reads
        harness.channel.read()
        #expect(harness.reads.reads == before)
        for byte in UInt8(2)...UInt8(50) { try harness.send(.ping, [byte]) }
        #expect(try harness.written().isEmpty)
        harness.channel.isWritable = true
        harness.channel.pipeline.fireChannelWritabilityChanged()
        let pongs = try harness.written()
        #expect(pongs.count == 1)
        #expect(pongs.first?.opcode == .pong && pongs.first?.data == ByteBuffer(bytes: [50]))
        #expect(harness.reads.reads == before + 1)
    }
}
