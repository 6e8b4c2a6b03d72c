import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing
@testable import BridgeServer

/// Issue 26.1: the whole request, head and body, is bounded in time, answered or not, and a plain-HTTP connection
/// counts toward its address until it closes (the slow-body attack: a `404` at once, then the body one byte at a time).
@Suite("Each request bounded in time, head and body", .tags(.unit))
struct RequestBoundTests {
    static let logger = Logger(label: "test.request-bound")

    /// The guard and the HTTP edges as the bridge's pipeline has them (with NIO's codec between them).
    static func pipeline(_ admission: ConnectionAdmission, probation: Bool = false) async throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        let connectionGuard = ConnectionGuard(
            admission: admission, address: "10.0.0.1", timeout: .seconds(10), logger: logger, probation: probation)
        try channel.pipeline.syncOperations.addHandler(connectionGuard)
        try channel.pipeline.syncOperations.configureHTTPServerPipeline(withPipeliningAssistance: false, withErrorHandling: false)
        try channel.pipeline.syncOperations.addHandler(HTTPEdgeHandler(maxBodySize: 1 << 20, connectionGuard: connectionGuard))
        try await channel.connect(to: SocketAddress(ipAddress: "10.0.0.1", port: 40000)).get()
        return channel
    }

    @Test("a request answered at once whose body drips is closed at the bound, and counted until then")
    func slowBody() async throws {
        let admission = ConnectionAdmission(maxAccepted: 10, maxPendingPerAddress: 10)
        #expect(admission.admit("10.0.0.1").refusal == nil)
        let channel = try await Self.pipeline(admission)
        try channel.writeInbound(ByteBuffer(string: "POST /api/health HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"))
        // The answer goes out at once (a 404 from a route that does not read the body).
        try channel.writeOutbound(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: .notFound,
                                                                               headers: ["content-length": "0"])))
        try channel.writeOutbound(HTTPServerResponsePart.end(nil))
        for _ in 0..<9 {
            try channel.writeInbound(ByteBuffer(string: "x"))
            channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        }
        #expect(channel.isActive)
        #expect(admission.counts(for: "10.0.0.1").pending == 1)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(!channel.isActive)
        #expect(admission.counts(for: "10.0.0.1").pending == 0)
    }

    @Test("a request that arrived whole ends the bound; the next one's starts at its first byte")
    func wholeRequests() async throws {
        let admission = ConnectionAdmission(maxAccepted: 10, maxPendingPerAddress: 10)
        #expect(admission.admit("10.0.0.1").refusal == nil)
        let channel = try await Self.pipeline(admission)
        try channel.writeInbound(ByteBuffer(string: "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok"))
        channel.embeddedEventLoop.advanceTime(by: .seconds(30))
        #expect(channel.isActive)
        // A second request's head, dripped.
        try channel.writeInbound(ByteBuffer(string: "GET /b HTTP/1.1\r\n"))
        channel.embeddedEventLoop.advanceTime(by: .seconds(9))
        try channel.writeInbound(ByteBuffer(string: "X: 1\r\n"))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(!channel.isActive)
    }

    @Test("on probation, a request other than a WebSocket upgrade gets 503 server_busy and a close")
    func probationRefusesPlainRequests() async throws {
        let admission = ConnectionAdmission(maxAccepted: 10, maxPendingPerAddress: 10, maxPending: 1, reserve: 1)
        #expect(admission.admit("10.0.0.9").refusal == nil)
        #expect(admission.admit("10.0.0.1").isProbation)
        let channel = try await Self.pipeline(admission, probation: true)
        try channel.writeInbound(ByteBuffer(string: "GET /api/health HTTP/1.1\r\nHost: x\r\n\r\n"))
        // Nothing reaches the application.
        #expect(try channel.readInbound(as: HTTPServerRequestPart.self) == nil)
        var written = ""
        while let part = try channel.readOutbound(as: ByteBuffer.self) { written += String(buffer: part) }
        #expect(written.hasPrefix("HTTP/1.1 503 Service Unavailable\r\n"), "\(written)")
        #expect(written.contains("server_busy") && written.lowercased().contains("retry-after: 5\r\n"))
        channel.embeddedEventLoop.run()
        #expect(!channel.isActive)
        #expect(admission.onProbation == 0 && admission.counts(for: "10.0.0.1").pending == 0)
    }

    @Test("on probation, a WebSocket upgrade goes on; the connection has the shorter probation bound to upgrade")
    func probationLetsAnUpgradeThrough() async throws {
        let admission = ConnectionAdmission(maxAccepted: 10, maxPendingPerAddress: 10, maxPending: 1, reserve: 1)
        #expect(admission.admit("10.0.0.9").refusal == nil)
        #expect(admission.admit("10.0.0.1").isProbation)
        let channel = try await Self.pipeline(admission, probation: true)
        try channel.writeInbound(ByteBuffer(string: "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"))
        guard case .head(let head)? = try channel.readInbound(as: HTTPServerRequestPart.self) else {
            Issue.record("the upgrade request did not go on")
            return
        }
        #expect(head.uri == "/")
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
        // The upgrade check takes its time (a token to look up) but must end within the probation bound.
        channel.embeddedEventLoop.advanceTime(by: ConnectionGuard.probationTimeout - .milliseconds(1))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
        #expect(admission.onProbation == 0)
    }
}
