import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Testing
@testable import BridgeHTTP
@testable import BridgeServer

/// The bounds before a connection's first answer (issue 16 item 5): admission counts, the time bound with an
/// injected clock (EmbeddedEventLoop's), the 503 for a refused connection, and the shaped answer of a refused upgrade.
@Suite("Connection admission and time bounds", .tags(.unit))
struct ConnectionLimitsTests {
    static let logger = Logger(label: "test.connection-limits")

    @Test("per-address cap on connections waiting for an answer, a total cap on all, places given back")
    func admission() throws {
        let admission = ConnectionAdmission(maxAccepted: 5, maxPendingPerAddress: 2)
        #expect(admission.admit("10.0.0.1").refusal == nil)
        #expect(admission.admit("10.0.0.1").refusal == nil)
        let perAddress = try #require(admission.admit("10.0.0.1").refusal)
        #expect(perAddress.status == .serviceUnavailable && perAddress.code == "too_many_pending_connections")
        // Another address is not affected by the first one's waiting connections.
        #expect(admission.admit("10.0.0.2").refusal == nil)
        // An answer frees the waiting place, not the connection's place in the total.
        admission.answered("10.0.0.1")
        #expect(admission.counts(for: "10.0.0.1") == (accepted: 3, pending: 1))
        #expect(admission.admit("10.0.0.1").refusal == nil)
        #expect(admission.admit("10.0.0.3").refusal == nil)
        let full = try #require(admission.admit("10.0.0.4").refusal)
        #expect(full.code == "server_busy" && full.headers[.retryAfter] == "5")
        admission.closed()
        #expect(admission.admit("10.0.0.4").refusal == nil)
    }

    @Test("no complete request within the timeout: closed at the deadline, not before (injected clock)")
    func headTimeout() async throws {
        let admission = ConnectionAdmission(maxAccepted: 10, maxPendingPerAddress: 10)
        #expect(admission.admit("10.0.0.1").refusal == nil)
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(
            ConnectionGuard(admission: admission, address: "10.0.0.1", timeout: .seconds(10), logger: Self.logger))
        try await channel.connect(to: SocketAddress(ipAddress: "10.0.0.1", port: 40000)).get()
        // Half a request head, dripped: it extends nothing.
        for _ in 0..<9 {
            try channel.writeInbound(ByteBuffer(string: "G"))
            channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        }
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(999))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
        #expect(admission.counts(for: "10.0.0.1").pending == 0)
    }

    @Test("the upgrade to a WebSocket ends the bound and gives the address's place back; the connection lives on")
    func upgradedInTime() async throws {
        let admission = ConnectionAdmission(maxAccepted: 10, maxPendingPerAddress: 10)
        #expect(admission.admit("10.0.0.1").refusal == nil)
        let channel = EmbeddedChannel()
        let connectionGuard = ConnectionGuard(admission: admission, address: "10.0.0.1", timeout: .seconds(10), logger: Self.logger)
        try channel.pipeline.syncOperations.addHandler(connectionGuard)
        try await channel.connect(to: SocketAddress(ipAddress: "10.0.0.1", port: 40000)).get()
        channel.embeddedEventLoop.advanceTime(by: .seconds(5))
        channel.writeAndFlush(ByteBuffer(string: "HTTP/1.1 101 Switching Protocols\r\n\r\n"), promise: nil)
        channel.embeddedEventLoop.run()
        #expect(try channel.readOutbound(as: ByteBuffer.self).map { String(buffer: $0) } == "HTTP/1.1 101 Switching Protocols\r\n\r\n")
        // An answer alone does not end the bound (issue 26.1); the upgrade does.
        #expect(admission.counts(for: "10.0.0.1").pending == 1)
        connectionGuard.upgraded()
        #expect(admission.counts(for: "10.0.0.1").pending == 0)
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(channel.isActive)
    }

    @Test("a refused connection gets a 503 with a JSON body when it speaks, and is closed")
    func refusalAnswer() async throws {
        let admission = ConnectionAdmission(maxAccepted: 10, maxPendingPerAddress: 1)
        _ = admission.admit("10.0.0.1")
        let refusal = try #require(admission.admit("10.0.0.1").refusal)
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(ConnectionRefusalHandler(refusal: refusal))
        try await channel.connect(to: SocketAddress(ipAddress: "10.0.0.1", port: 40000)).get()
        // Nothing before the client speaks: behind TLS, its first plaintext is its request after the handshake.
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
        try channel.writeInbound(ByteBuffer(string: "GET / HTTP/1.1\r\n"))
        let written = try #require(try channel.readOutbound(as: ByteBuffer.self))
        let text = String(buffer: written)
        #expect(text.hasPrefix("HTTP/1.1 503 Service Unavailable\r\n"))
        #expect(text.contains("Connection: close\r\n") && text.contains("Retry-After: 5\r\n"))
        #expect(text.hasSuffix(refusal.bodyText) && refusal.bodyText.contains("too_many_pending_connections"))
        channel.embeddedEventLoop.advanceTime(by: ConnectionRefusalHandler.linger)
        #expect(!channel.isActive)
    }

    @Test("a refused upgrade's response is replaced, typed, by the recorded answer; other responses pass")
    func refusedUpgradeAnswer() throws {
        let refusals = UpgradeRefusals()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(RefusalResponseHandler(refusals: refusals))
        // No refusal recorded: the response goes out as it is.
        try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .ok)))
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        #expect(try channel.readOutbound(as: HTTPResponsePart.self) == .head(HTTPResponse(status: .ok)))
        #expect(try channel.readOutbound(as: HTTPResponsePart.self) == .end(nil))

        var headers = HTTPFields()
        headers[.retryAfter] = "60"
        let refusal = JSONErrorResponse(status: .tooManyRequests, code: "rate_limited", message: "wait", headers: headers)
        refusals.record(refusal, for: ObjectIdentifier(channel))
        // What HummingbirdWebSocket writes for a refused upgrade (whatever its status).
        try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .badRequest, headerFields: [.connection: "close", .contentLength: "0"])))
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        guard case .head(let head) = try channel.readOutbound(as: HTTPResponsePart.self) else {
            Issue.record("expected a head")
            return
        }
        #expect(head.status == .tooManyRequests)
        #expect(head.headerFields[.retryAfter] == "60" && head.headerFields[.connection] == "close")
        #expect(head.headerFields[.contentType] == "application/json")
        guard case .body(let body) = try channel.readOutbound(as: HTTPResponsePart.self) else {
            Issue.record("expected a body")
            return
        }
        #expect(String(buffer: body) == refusal.bodyText)
        #expect(head.headerFields[.contentLength] == "\(body.readableBytes)")
        #expect(try channel.readOutbound(as: HTTPResponsePart.self) == .end(nil))
        _ = try channel.finish()
    }

    @Test("a refused connection that says nothing is closed at the deadline without an answer (injected clock)")
    func refusalOfASilentPeer() async throws {
        let refusal = ConnectionAdmission(maxAccepted: 1, maxPendingPerAddress: 1).busy
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(ConnectionRefusalHandler(refusal: refusal))
        try await channel.connect(to: SocketAddress(ipAddress: "10.0.0.1", port: 40000)).get()
        channel.embeddedEventLoop.advanceTime(by: ConnectionRefusalHandler.deadline - .milliseconds(1))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
    }

    @Test("connections that are not WebSockets hold at most their pool; an address under its share gets a reserve place")
    func reserve() throws {
        let admission = ConnectionAdmission(maxAccepted: 20, maxPendingPerAddress: 3, maxPending: 4, reserve: 2)
        // Two flooding addresses take the whole pool, each within its own cap.
        for address in ["10.0.0.1", "10.0.0.1", "10.0.0.2", "10.0.0.2"] {
            #expect(admission.admit(address).isProbation == false)
        }
        // The pool is full: a flooding address is refused although under its own cap and the total.
        #expect(admission.admit("10.0.0.1").refusal?.code == "server_busy")
        // A new address is under its share: on probation (its first request must be an upgrade), twice at most.
        #expect(admission.admit("10.0.0.3").isProbation)
        #expect(admission.admit("10.0.0.3").isProbation)
        #expect(admission.admit("10.0.0.3").refusal?.code == "server_busy")
        #expect(admission.onProbation == 2)
        // The reserve is full: the next new address is refused too.
        #expect(admission.admit("10.0.0.4").refusal?.code == "server_busy")
        // One on probation became a WebSocket: its reserve place is free again, the pool still full.
        admission.answered("10.0.0.3", probation: true)
        #expect(admission.onProbation == 1)
        #expect(admission.admit("10.0.0.4").isProbation)
        // A flooding connection closed: its pool place goes to the next comer, not on probation.
        admission.abandoned("10.0.0.2")
        admission.closed()
        #expect(admission.admit("10.0.0.5").isProbation == false)
        #expect(admission.counts(for: "10.0.0.5").pending == 1)
    }

    @Test("the reserve is within the total: with every place taken, nobody is let in on probation")
    func reserveWithinTheTotal() {
        let admission = ConnectionAdmission(maxAccepted: 3, maxPendingPerAddress: 3, maxPending: 2, reserve: 5)
        #expect(admission.admit("10.0.0.1").refusal == nil)
        #expect(admission.admit("10.0.0.1").refusal == nil)
        #expect(admission.admit("10.0.0.2").isProbation)
        #expect(admission.admit("10.0.0.3").refusal?.code == "server_busy")
    }

    @Test("paths are normalised before routing: empty, dot and dot-dot segments, escaped unreserved characters")
    func normalisation() {
        typealias Normalizer = PathNormalizingResponder<NeverResponder>
        #expect(Normalizer.normalize("//api/status") == "/api/status")
        #expect(Normalizer.normalize("/./api/status") == "/api/status")
        #expect(Normalizer.normalize("/%61pi/status") == "/api/status")
        #expect(Normalizer.normalize("/%2e/api/%2E%2e/api/status?token=a%2Fb") == "/api/status?token=a%2Fb")
        #expect(Normalizer.normalize("/api/../api/status") == "/api/status")
        #expect(Normalizer.normalize("/../../api/status") == "/api/status")
        #expect(Normalizer.normalize("/api%2Fstatus") == "/api%2Fstatus")
        #expect(Normalizer.normalize("/%zz/%") == "/%zz/%")
        #expect(Normalizer.normalize("/") == "/")
        #expect(Normalizer.normalize("*") == nil)
    }
}

/// A responder type to name ``PathNormalizingResponder``'s static helpers with.
struct NeverResponder: HTTPResponder {
    typealias Context = BasicRequestContext
    func respond(to request: Request, context: Context) async throws -> Response { Response(status: .notFound) }
}
