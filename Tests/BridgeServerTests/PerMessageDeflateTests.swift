import BridgeWebSocketDeflate
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing
@testable import BridgeServer

/// permessage-deflate (RFC 7692, issue 32 goal 5): the server's choice among offers, and the connection handler's
/// compressed messages both ways on an embedded channel (RSV1 rules, a bounded inflater, fragments, the compressor's
/// context takeover and its release when idle).
@Suite("permessage-deflate", .tags(.unit))
struct PerMessageDeflateTests {
    static let settings = PerMessageDeflateSettings()

    // MARK: Negotiation

    @Test("Chromium's offer is accepted, the bridge asking for client_no_context_takeover")
    func chromiumOffer() throws {
        let acceptance = try #require(PerMessageDeflateNegotiation.accept(
            offers: ["permessage-deflate; client_max_window_bits"], settings: Self.settings))
        #expect(acceptance.responseHeader == "permessage-deflate; client_no_context_takeover")
        #expect(acceptance.parameters.serverMaxWindowBits == Self.settings.maxWindowBits)
        #expect(acceptance.parameters.clientNoContextTakeover)
        #expect(!acceptance.parameters.serverNoContextTakeover)
    }

    @Test("server_max_window_bits is honoured (the smaller of the offer's and the bridge's) and echoed")
    func serverWindow() throws {
        let small = try #require(PerMessageDeflateNegotiation.accept(
            offers: ["permessage-deflate; server_max_window_bits=9; server_no_context_takeover"], settings: Self.settings))
        #expect(small.parameters.serverMaxWindowBits == 9)
        #expect(small.parameters.serverNoContextTakeover)
        #expect(small.responseHeader == "permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=9")
        let large = try #require(PerMessageDeflateNegotiation.accept(
            offers: ["permessage-deflate;server_max_window_bits=\"15\""], settings: Self.settings))
        #expect(large.parameters.serverMaxWindowBits == Self.settings.maxWindowBits)
        #expect(large.responseHeader.hasSuffix("server_max_window_bits=\(Self.settings.maxWindowBits)"))
    }

    @Test("a malformed or unsupported offer is declined and the next one taken; none left declines the extension",
          arguments: [
            "permessage-deflate; foo",
            "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
            "permessage-deflate; server_max_window_bits=8",
            "permessage-deflate; server_max_window_bits=16",
            "permessage-deflate; server_max_window_bits=010",
            "permessage-deflate; server_max_window_bits",
            "permessage-deflate; client_max_window_bits=7",
            "permessage-deflate; client_no_context_takeover=1",
            "permessage-deflate; server_max_window_bits=\"1 0\"",
            "permessage-deflate; server_max_window_bits=\"10",
            "x-webkit-deflate-frame",
          ])
    func declined(offer: String) throws {
        #expect(PerMessageDeflateNegotiation.accept(offers: [offer], settings: Self.settings) == nil)
        let next = try #require(PerMessageDeflateNegotiation.accept(
            offers: [offer, "permessage-deflate; server_max_window_bits=10"], settings: Self.settings))
        #expect(next.parameters.serverMaxWindowBits == 10)
    }

    @Test("offers split over several header lines are read in order")
    func severalLines() throws {
        let acceptance = try #require(PerMessageDeflateNegotiation.accept(
            offers: ["foo, permessage-deflate; bar", "permessage-deflate; server_max_window_bits=10"], settings: Self.settings))
        #expect(acceptance.parameters.serverMaxWindowBits == 10)
    }

    @Test("the client refuses an answer it did not allow, and reads one it did")
    func clientAccept() throws {
        #expect(try PerMessageDeflateNegotiation.clientAccept(response: []) == nil)
        let parameters = try #require(try PerMessageDeflateNegotiation.clientAccept(
            response: ["permessage-deflate; server_no_context_takeover; client_max_window_bits=10"]))
        #expect(parameters.serverNoContextTakeover)
        #expect(parameters.clientMaxWindowBits == 10)
        for bad in ["permessage-deflate; foo", "x-other", "permessage-deflate, permessage-deflate",
                    "permessage-deflate; server_max_window_bits=16", "permessage-deflate; client_no_context_takeover; client_no_context_takeover"] {
            #expect(throws: PerMessageDeflateError.self) { try PerMessageDeflateNegotiation.clientAccept(response: [bad]) }
        }
    }

    // MARK: The connection handler

    struct Harness {
        let channel: EmbeddedChannel
        let messages: ClientMessages

        /// A masked frame from the client.
        func send(_ opcode: WebSocketOpcode, _ payload: ByteBuffer, fin: Bool = true, rsv1: Bool = false) throws {
            let key: WebSocketMaskingKey = [0x12, 0x34, 0x56, 0x78]
            var data = payload
            data.webSocketMask(key)
            try channel.writeInbound(WebSocketFrame(fin: fin, rsv1: rsv1, opcode: opcode, maskKey: key, data: data))
        }

        func written() throws -> [WebSocketFrame] {
            var frames: [WebSocketFrame] = []
            while let frame = try channel.readOutbound(as: WebSocketFrame.self) { frames.append(frame) }
            return frames
        }

        func delivered() async -> [String] {
            messages.finish()
            var texts: [String] = []
            for await message in messages {
                if case .text(let bytes) = message { texts.append(String(buffer: bytes)) }
            }
            return texts
        }
    }

    static func harness(deflate: PerMessageDeflateParameters? = PerMessageDeflateParameters(serverMaxWindowBits: 11, clientNoContextTakeover: true),
                        maxMessageSize: Int = 1 << 20) throws -> Harness {
        let channel = EmbeddedChannel()
        let messages = ClientMessages()
        try channel.pipeline.syncOperations.addHandler(WebSocketConnectionHandler(
            messages: messages, maxMessageSize: maxMessageSize, closeTimeout: .seconds(15),
            deflate: deflate, settings: settings, idleRelease: .seconds(10)))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
        return Harness(channel: channel, messages: messages)
    }

    /// What a client's compressor makes of `text` (each message on its own).
    static func clientCompressed(_ text: String) throws -> ByteBuffer {
        let compressor = PerMessageDeflateCompressor(
            windowBits: 15, noContextTakeover: true, settings: PerMessageDeflateSettings(maxWindowBits: 15, minimumSize: 0))
        return try compressor.compress(ByteBuffer(string: text), allocator: ByteBufferAllocator())
    }

    static func closeCode(_ frame: WebSocketFrame?) -> WebSocketErrorCode? {
        guard let frame, frame.opcode == .connectionClose else { return nil }
        var data = frame.data
        return data.readWebSocketErrorCode()
    }

    static let update = #"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hello there"}}}}"#

    @Test("a compressed message (RSV1) is inflated and delivered; so is one in compressed fragments")
    func inboundCompressed() async throws {
        let harness = try Self.harness()
        try harness.send(.text, try Self.clientCompressed(Self.update), rsv1: true)
        var compressed = try Self.clientCompressed(Self.update + Self.update)
        let firstSlice = compressed.readSlice(length: 7)
        let secondSlice = compressed.readSlice(length: 5)
        let first = try #require(firstSlice)
        let second = try #require(secondSlice)
        try harness.send(.text, first, fin: false, rsv1: true)
        try harness.send(.continuation, second, fin: false)
        try harness.send(.continuation, compressed)
        try harness.send(.text, ByteBuffer(string: "plain"))
        #expect(try harness.written().isEmpty)
        #expect(await harness.delivered() == [Self.update, Self.update + Self.update, "plain"])
    }

    @Test("a zip bomb closes with 1009 once the inflated bytes pass the limit, and nothing is delivered")
    func zipBomb() async throws {
        let harness = try Self.harness(maxMessageSize: 1 << 20)
        let bomb = try Self.clientCompressed(String(repeating: " ", count: 16 << 20))
        #expect(bomb.readableBytes < 32 << 10)
        try harness.send(.text, bomb, rsv1: true)
        let frames = try harness.written()
        #expect(Self.closeCode(frames.last) == .messageTooLarge)
        #expect(await harness.delivered().isEmpty)
    }

    @Test("a zip bomb in fragments is bounded by the message, not the fragment")
    func fragmentedBomb() async throws {
        let harness = try Self.harness(maxMessageSize: 1 << 20)
        var bomb = try Self.clientCompressed(String(repeating: "a", count: 4 << 20))
        let halfSlice = bomb.readSlice(length: bomb.readableBytes / 2)
        let half = try #require(halfSlice)
        try harness.send(.text, half, fin: false, rsv1: true)
        try harness.send(.continuation, bomb)
        #expect(Self.closeCode(try harness.written().last) == .messageTooLarge)
        #expect(await harness.delivered().isEmpty)
    }

    @Test("RSV1 without the extension, on a continuation, or on a control frame closes with 1002")
    func rsv1Rules() async throws {
        let plain = try Self.harness(deflate: nil)
        try plain.send(.text, try Self.clientCompressed("hello"), rsv1: true)
        #expect(Self.closeCode(try plain.written().last) == .protocolError)

        let continuation = try Self.harness()
        try continuation.send(.text, ByteBuffer(string: "a"), fin: false)
        try continuation.send(.continuation, ByteBuffer(string: "b"), rsv1: true)
        #expect(Self.closeCode(try continuation.written().last) == .protocolError)

        let ping = try Self.harness()
        try ping.send(.ping, ByteBuffer(string: "p"), rsv1: true)
        #expect(Self.closeCode(try ping.written().last) == .protocolError)
        #expect(await continuation.delivered().isEmpty)
    }

    @Test("data that is not deflate closes with 1007")
    func corrupt() async throws {
        let harness = try Self.harness()
        try harness.send(.text, ByteBuffer(bytes: [0xFF, 0xFF, 0xFF, 0xFF, 0x00]), rsv1: true)
        #expect(Self.closeCode(try harness.written().last) == .dataInconsistentWithMessage)
        #expect(await harness.delivered().isEmpty)
    }

    @Test("inflated text is checked for UTF-8 (1007)")
    func inflatedUTF8() async throws {
        let harness = try Self.harness()
        let compressor = PerMessageDeflateCompressor(windowBits: 15, noContextTakeover: true, settings: PerMessageDeflateSettings(minimumSize: 0))
        let bad = try compressor.compress(ByteBuffer(bytes: Array("{\"x\":\"".utf8) + [0xFF]), allocator: ByteBufferAllocator())
        try harness.send(.text, bad, rsv1: true)
        #expect(Self.closeCode(try harness.written().last) == .dataInconsistentWithMessage)
    }

    /// Inflates frames the handler wrote as a client would (one inflater for the connection: context takeover).
    static func inflate(_ frames: [WebSocketFrame], with inflater: PerMessageDeflateInflater) throws -> [String] {
        try frames.map { frame in
            guard frame.rsv1 else { return String(buffer: frame.data) }
            return String(buffer: try inflater.inflate(frame.data, isFinal: true, limit: 1 << 20, allocator: ByteBufferAllocator()))
        }
    }

    @Test("messages out are compressed (RSV1) with the context taken over; tiny ones and control frames are not")
    func outbound() throws {
        let harness = try Self.harness()
        try harness.channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: Self.update))).wait()
        try harness.channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: Self.update))).wait()
        try harness.channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: "{}"))).wait()
        try harness.channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .ping, data: ByteBuffer(string: String(repeating: "p", count: 100)))).wait()
        let frames = try harness.written()
        #expect(frames.map(\.rsv1) == [true, true, false, false])
        #expect(frames[0].data.readableBytes < Self.update.utf8.count)
        // The second refers back to the first: a few bytes.
        #expect(frames[1].data.readableBytes < 20)
        let inflater = PerMessageDeflateInflater(noContextTakeover: false)
        #expect(try Self.inflate(Array(frames.prefix(3)), with: inflater) == [Self.update, Self.update, "{}"])
    }

    @Test("server_no_context_takeover: every message compressed on its own")
    func noContextTakeover() throws {
        let harness = try Self.harness(deflate: PerMessageDeflateParameters(serverMaxWindowBits: 11, serverNoContextTakeover: true, clientNoContextTakeover: true))
        for _ in 0..<2 {
            try harness.channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: Self.update))).wait()
        }
        let frames = try harness.written()
        #expect(frames[0].data == frames[1].data)
        let inflater = PerMessageDeflateInflater(noContextTakeover: true)
        #expect(try Self.inflate(frames, with: inflater) == [Self.update, Self.update])
    }

    @Test("the compressor is released after an idle period (virtual time), and the stream the client reads stays valid")
    func idleRelease() throws {
        let harness = try Self.harness()
        let loop = harness.channel.embeddedEventLoop
        func send() throws -> WebSocketFrame {
            try harness.channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: Self.update))).wait()
            return try #require(try harness.written().first)
        }
        let inflater = PerMessageDeflateInflater(noContextTakeover: false)
        let first = try send()
        let warm = try send()
        loop.advanceTime(by: .seconds(5))
        let stillWarm = try send()  // within the period: context kept
        #expect(warm.data.readableBytes < first.data.readableBytes / 4)
        #expect(stillWarm.data.readableBytes < first.data.readableBytes / 4)
        loop.advanceTime(by: .seconds(25))  // two whole periods with nothing compressed
        let cold = try send()
        #expect(cold.data.readableBytes == first.data.readableBytes)
        #expect(try Self.inflate([first, warm, stillWarm, cold], with: inflater) == Array(repeating: Self.update, count: 4))
    }
}
