import BridgeHTTP
import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP2
import NIOHTTPTypes
import Testing
@testable import BridgeServer

/// Issue 28 item 1: the choice of HTTP/1.1 or HTTP/2 per connection (``HTTP2ProtocolSelector``), the edges of an
/// HTTP/2 stream (``HTTP2StreamGuard``) and an HTTP/2 connection's admission place (``ConnectionGuard``), on
/// embedded channels with their manual clock.
@Suite("HTTP/2: protocol choice, stream edges, admission", .tags(.unit))
struct HTTP2EdgeTests {
    static let logger = Logger(label: "test.http2-edges")

    /// What a selector decided, and the bytes the pipeline it built received, in order.
    final class Recorder: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        var choices: [HTTP2ProtocolSelector.Choice] = []
        var failures = 0
        var received = ""

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var bytes = unwrapInboundIn(data)
            received += bytes.readString(length: bytes.readableBytes) ?? ""
        }
    }

    static func selecting() throws -> (EmbeddedChannel, Recorder) {
        let channel = EmbeddedChannel()
        let recorder = Recorder()
        let selector = HTTP2ProtocolSelector(
            configure: { choice, context in
                recorder.choices.append(choice)
                try context.pipeline.syncOperations.addHandler(recorder)
            },
            failed: { _ in recorder.failures += 1 })
        try channel.pipeline.syncOperations.addHandler(selector)
        return (channel, recorder)
    }

    @Test("the h2c preface, even cut across reads, chooses HTTP/2; the bytes go on whole and in order")
    func prefaceChoosesHTTP2() throws {
        let (channel, recorder) = try Self.selecting()
        try channel.writeInbound(ByteBuffer(string: "PRI * HTTP/2.0\r\n"))
        #expect(recorder.choices.isEmpty)
        try channel.writeInbound(ByteBuffer(string: "\r\nSM\r\n\r\n\0\0\u{12}"))
        #expect(recorder.choices == [.http2])
        try channel.writeInbound(ByteBuffer(string: "after"))
        #expect(recorder.received == "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\u{12}after")
        #expect(throws: (any Error).self) { try channel.pipeline.syncOperations.handler(type: HTTP2ProtocolSelector.self) }
    }

    @Test("an HTTP/1.1 request, or bytes that leave the preface, choose HTTP/1.1 at once")
    func http1Request() throws {
        for first in ["GET /api/health HTTP/1.1\r\n", "P", "PRI * HTTP/2.0\r\n\r\nXX"] {
            let (channel, recorder) = try Self.selecting()
            try channel.writeInbound(ByteBuffer(string: first))
            // "P" alone is still a prefix of the preface: it waits.
            #expect(recorder.choices == (first == "P" ? [] : [.http1]), "\(first.debugDescription)")
            if first == "P" {
                try channel.writeInbound(ByteBuffer(string: "OST / HTTP/1.1\r\n"))
                #expect(recorder.choices == [.http1])
                #expect(recorder.received == "POST / HTTP/1.1\r\n")
            } else {
                #expect(recorder.received == first)
            }
        }
    }

    @Test("a connection that ends before it chose fails the choice; nothing is built")
    func endsBeforeChoosing() async throws {
        let (channel, recorder) = try Self.selecting()
        try await channel.connect(to: SocketAddress(ipAddress: "10.0.0.1", port: 40000)).get()
        try channel.writeInbound(ByteBuffer(string: "PRI * HT"))
        try await channel.close()
        #expect(recorder.choices.isEmpty && recorder.failures == 1)
    }

    @Test("a peer that half-closes before it chose (its FIN with half-closure allowed) is closed at once")
    func halfClosedBeforeChoosing() async throws {
        for first in ["", "PRI * HT"] {
            let (channel, recorder) = try Self.selecting()
            try await channel.connect(to: SocketAddress(ipAddress: "10.0.0.1", port: 40000)).get()
            if !first.isEmpty { try channel.writeInbound(ByteBuffer(string: first)) }
            channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
            #expect(!channel.isActive, "\(first.debugDescription)")
            #expect(recorder.choices.isEmpty && recorder.failures == 1)
        }
    }

    @Test("the choice by ALPN: h2 is HTTP/2, http/1.1 or none is HTTP/1.1")
    func alpn() {
        #expect(HTTP2ProtocolSelector.choice(forALPN: "h2") == .http2)
        #expect(HTTP2ProtocolSelector.choice(forALPN: "http/1.1") == .http1)
        #expect(HTTP2ProtocolSelector.choice(forALPN: nil) == .http1)
    }

    // MARK: The stream's edges

    static func stream(busy: JSONErrorResponse? = nil, maxBodySize: Int = 1000) async throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(
            HTTP2StreamGuard(timeout: .seconds(10), maxBodySize: maxBodySize, busy: busy, logger: logger))
        try await channel.connect(to: SocketAddress(ipAddress: "10.0.0.1", port: 40000)).get()
        return channel
    }

    static func head(_ method: HTTPRequest.Method, _ fields: HTTPFields = [:]) -> HTTPRequestPart {
        .head(HTTPRequest(method: method, scheme: "https", authority: "desk:9099", path: "/api/health", headerFields: fields))
    }

    /// The status and the JSON `error` of the response written on `channel`.
    static func answer(_ channel: EmbeddedChannel) throws -> (HTTPResponse.Status?, String?) {
        var status: HTTPResponse.Status?
        var body = ""
        while let part = try channel.readOutbound(as: HTTPResponsePart.self) {
            switch part {
            case .head(let head): status = head.status
            case .body(var bytes): body += bytes.readString(length: bytes.readableBytes) ?? ""
            case .end: break
            }
        }
        let json = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        return (status, json?["error"] as? String)
    }

    @Test("a stream whose request has not fully arrived within the bound is reset; one that has is not")
    func requestBound() async throws {
        let slow = try await Self.stream()
        try slow.writeInbound(Self.head(.post, [.contentLength: "10"]))
        slow.embeddedEventLoop.advanceTime(by: .seconds(9))
        try slow.writeInbound(HTTPRequestPart.body(ByteBuffer(string: "12345")))
        #expect(slow.isActive)
        slow.embeddedEventLoop.advanceTime(by: .seconds(2))
        #expect(!slow.isActive)

        let whole = try await Self.stream()
        try whole.writeInbound(Self.head(.get))
        try whole.writeInbound(HTTPRequestPart.end(nil))
        whole.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(whole.isActive)
        _ = try whole.finish()
    }

    @Test("CONNECT (an RFC 8441 WebSocket) gets 501 websocket_needs_http1 and never reaches the routes")
    func connectRefused() async throws {
        let channel = try await Self.stream()
        try channel.writeInbound(HTTPRequestPart.head(HTTPRequest(
            method: .connect, scheme: nil, authority: "desk:9099", path: nil)))
        #expect(try channel.readInbound(as: HTTPRequestPart.self) == nil)
        let (status, error) = try Self.answer(channel)
        #expect(status == .notImplemented && error == "websocket_needs_http1")
    }

    @Test("a body over the limit, by content-length or as it arrives, gets 413")
    func bodyLimit() async throws {
        let declared = try await Self.stream(maxBodySize: 10)
        try declared.writeInbound(Self.head(.post, [.contentLength: "11"]))
        #expect(try Self.answer(declared).0 == .contentTooLarge)

        let streamed = try await Self.stream(maxBodySize: 10)
        try streamed.writeInbound(Self.head(.post))
        try streamed.writeInbound(HTTPRequestPart.body(ByteBuffer(string: "123456")))
        #expect(try Self.answer(streamed).0 == nil)
        try streamed.writeInbound(HTTPRequestPart.body(ByteBuffer(string: "123456")))
        #expect(try Self.answer(streamed).0 == .contentTooLarge)
    }

    @Test("a stream on a connection on probation gets the 503; a stream without :authority gets 400")
    func probationAndAuthority() async throws {
        let busy = ConnectionAdmission(maxAccepted: 1, maxPendingPerAddress: 1).busy
        let probation = try await Self.stream(busy: busy)
        try probation.writeInbound(Self.head(.get))
        #expect(try Self.answer(probation) == (.serviceUnavailable, "server_busy"))

        let anonymous = try await Self.stream()
        try anonymous.writeInbound(HTTPRequestPart.head(HTTPRequest(method: .get, scheme: "http", authority: nil, path: "/")))
        #expect(try Self.answer(anonymous) == (.badRequest, "missing_authority"))
    }

    @Test("HEAD is answered as GET without its body")
    func head() async throws {
        let channel = try await Self.stream()
        try channel.writeInbound(Self.head(.head))
        guard case .head(let forwarded)? = try channel.readInbound(as: HTTPRequestPart.self) else {
            Issue.record("the request was not passed on")
            return
        }
        #expect(forwarded.method == .get)
        try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .ok, headerFields: [.contentLength: "5"])))
        try channel.writeOutbound(HTTPResponsePart.body(ByteBuffer(string: "hello")))
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        var parts: [String] = []
        while let part = try channel.readOutbound(as: HTTPResponsePart.self) {
            switch part {
            case .head: parts.append("head")
            case .body: parts.append("body")
            case .end: parts.append("end")
            }
        }
        #expect(parts == ["head", "end"])
    }

    // MARK: The connection's admission place

    @Test("an HTTP/2 connection keeps its place until it closes and is not closed by the request bound")
    func admissionPlace() async throws {
        let admission = ConnectionAdmission(maxAccepted: 10, maxPendingPerAddress: 10)
        #expect(admission.admit("10.0.0.1").refusal == nil)
        let channel = EmbeddedChannel()
        let connectionGuard = ConnectionGuard(admission: admission, address: "10.0.0.1", timeout: .seconds(10), logger: Self.logger)
        try channel.pipeline.syncOperations.addHandler(connectionGuard)
        try await channel.connect(to: SocketAddress(ipAddress: "10.0.0.1", port: 40000)).get()
        try channel.writeInbound(ByteBuffer(string: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))
        connectionGuard.servingHTTP2()
        for _ in 0..<6 {
            try channel.writeInbound(ByteBuffer(string: "frames"))
            channel.embeddedEventLoop.advanceTime(by: .seconds(10))
        }
        #expect(channel.isActive)
        #expect(admission.counts(for: "10.0.0.1").pending == 1)
        try await channel.close()
        channel.embeddedEventLoop.run()
        #expect(admission.counts(for: "10.0.0.1").pending == 0)
    }

    @Test("an HTTP/2 connection on probation (a place only a WebSocket may use) keeps the probation bound")
    func probationBound() async throws {
        let admission = ConnectionAdmission(maxAccepted: 10, maxPendingPerAddress: 10)
        let channel = EmbeddedChannel()
        let connectionGuard = ConnectionGuard(
            admission: admission, address: "10.0.0.1", timeout: .seconds(10), logger: Self.logger, probation: true)
        try channel.pipeline.syncOperations.addHandler(connectionGuard)
        try await channel.connect(to: SocketAddress(ipAddress: "10.0.0.1", port: 40000)).get()
        connectionGuard.servingHTTP2()
        channel.embeddedEventLoop.advanceTime(by: ConnectionGuard.probationTimeout + .seconds(1))
        #expect(!channel.isActive)
    }
}

/// Issue 25's F5b for HTTP/2: at shutdown a connection without open streams closes at once.
@Suite("HTTP/2: shutdown", .tags(.unit))
struct HTTP2QuiesceTests {
    @Test("a connection without open streams closes when the server quiesces; one with a stream is left open")
    func quiesce() async throws {
        for streams in [0, 1] {
            let channel = EmbeddedChannel()
            try channel.pipeline.syncOperations.addHandler(HTTP2QuiesceHandler())
            try await channel.connect(to: SocketAddress(ipAddress: "10.0.0.1", port: 40000)).get()
            for id in 0..<2 {
                channel.pipeline.fireUserInboundEventTriggered(NIOHTTP2StreamCreatedEvent(
                    streamID: HTTP2StreamID(2 * id + 1), localInitialWindowSize: nil, remoteInitialWindowSize: nil))
            }
            for id in 0..<(2 - streams) {
                channel.pipeline.fireUserInboundEventTriggered(StreamClosedEvent(streamID: HTTP2StreamID(2 * id + 1), reason: nil))
            }
            channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
            channel.embeddedEventLoop.run()
            #expect(channel.isActive == (streams > 0), "\(streams) open")
        }
    }
}
