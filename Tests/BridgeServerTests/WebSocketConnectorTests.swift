import BridgeClient
import BridgePairing
import BridgeRPC
import BridgeServer
import BridgeTestKit
import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOWebSocket
import Testing

@Suite("WebSocketConnector against the real bridge", .timeLimit(.minutes(1)), .tags(.loopback))
struct WebSocketConnectorTests {
    /// The connector's handshake bound in tests that are not about it: its default (5 s) is a phone's, and the whole
    /// parallel run on 2 cores stalls its first tests for 7–15 s (a connect to a live bridge once ran out of it).
    static let handshakeBound = TestBounds.notUnderTest

    static let logger: Logger = {
        var logger = Logger(label: "test.connector")
        logger.logLevel = ProcessInfo.processInfo.environment["TEST_LOG"] == nil ? .critical : .debug
        return logger
    }()

    /// Sends the seed `initialize` and returns the first text message.
    static func initialize(_ connection: WebSocketConnector.Connection) async throws -> JSONValue {
        try await connection.send(text: HandshakeTests.seedInitialize)
        for try await message in connection.messages {
            if case .text(let text) = message { return try JSONValue(parsing: text) }
        }
        throw TestClientError.closed
    }

    @Test("IPv4: the bridge answers initialize over the connector")
    func ipv4() async throws {
        try await TestBridge.with { port, _ in
            let connector = WebSocketConnector(timeout: WebSocketConnectorTests.handshakeBound, logger: Self.logger)
            let answer = try await connector.connect(url: "ws://127.0.0.1:\(port)/") { connection in
                #expect(connection.remoteAddress == "127.0.0.1")
                #expect(connection.certificatePin == nil)
                return try await Self.initialize(connection)
            }
            #expect(answer["id"] == "1")
            #expect(answer["result"]?["protocol_version"] != nil)
        }
    }

    @Test("IPv6 literal: ws://[::1]:port/ opens (the WebSocket client library's URL parser cannot)")
    func ipv6Literal() async throws {
        try await TestBridge.with(configure: { $0.host = "::1" }, { port, _ in
            let connector = WebSocketConnector(timeout: WebSocketConnectorTests.handshakeBound, logger: Self.logger)
            let answer = try await connector.connect(url: "ws://[::1]:\(port)/") { connection in
                #expect(connection.remoteAddress == "::1")
                return try await Self.initialize(connection)
            }
            #expect(answer["result"]?["protocol_version"] != nil)
        })
    }

    @Test("a zone that names no interface of this machine: invalidURL at once, no connection")
    func unknownZone() async throws {
        let connector = WebSocketConnector(timeout: WebSocketConnectorTests.handshakeBound, logger: Self.logger)
        let error = await #expect(throws: WebSocketConnectorError.self) {
            try await connector.connect(url: "ws://[fe80::1%25nosuchif0]:9099/") { _ in }
        }
        guard case .invalidURL? = error else {
            Issue.record("expected invalidURL, got \(String(describing: error))")
            return
        }
    }

    @Test("a refused upgrade keeps its status and the bridge's JSON error; a good token opens")
    func unauthorized() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("oa-bridge-connector-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try TokenStore(directory: directory, logger: Self.logger)
        let authenticator = Authenticator(store: store)
        let pairing = try await store.issuePairingToken()
        guard case .paired(let session) = try await store.exchange(pairingToken: pairing.token) else {
            Issue.record("expected tokens")
            return
        }
        try await TestBridge.with(configure: { $0.authorizeUpgrade = authenticator.upgradeAuthorizer() }, { port, _ in
            let connector = WebSocketConnector(timeout: WebSocketConnectorTests.handshakeBound, logger: Self.logger)
            let url = "ws://127.0.0.1:\(port)/"
            let error = await #expect(throws: WebSocketConnectorError.self) {
                try await connector.connect(url: url) { _ in }
            }
            guard case .upgradeRefused(let status, let code, let message)? = error else {
                Issue.record("expected upgradeRefused, got \(String(describing: error))")
                return
            }
            #expect(status == 401)
            #expect(code == "missing_token")
            #expect(message?.isEmpty == false)
            #expect(error?.needsPairing == true)

            let wrong = await #expect(throws: WebSocketConnectorError.self) {
                try await connector.connect(url: url, token: "oa_at_not-a-token") { _ in }
            }
            #expect(wrong?.needsPairing == true)

            let answer = try await connector.connect(url: url, token: session.accessToken.token) { try await Self.initialize($0) }
            #expect(answer["result"]?["protocol_version"] != nil)
        })
    }

    @Test("nothing listening: refused, quickly")
    func refused() async throws {
        let closed = try ReservedPort()
        defer { withExtendedLifetime(closed) {} }
        let port = closed.port
        let connector = WebSocketConnector(timeout: .seconds(20), logger: Self.logger)
        let started = ContinuousClock.now
        let error = await #expect(throws: WebSocketConnectorError.self) {
            try await connector.connect(url: "ws://127.0.0.1:\(port)/") { _ in }
        }
        #expect(error == .refused(address: "127.0.0.1:\(port)"))
        #expect(ContinuousClock.now - started < .seconds(10))
    }

    @Test("a peer that accepts TCP and never answers the upgrade: timed out, connection closed")
    func silentPeer() async throws {
        try await SilentServer.with { port, accepted in
            let connector = WebSocketConnector(timeout: .milliseconds(500), logger: Self.logger)
            let started = ContinuousClock.now
            let error = await #expect(throws: WebSocketConnectorError.self) {
                try await connector.connect(url: "ws://127.0.0.1:\(port)/") { _ in }
            }
            #expect(error == .timedOut(address: "127.0.0.1:\(port)", after: .milliseconds(500)))
            #expect(ContinuousClock.now - started < .seconds(10))
            // The connector closed its side: the server sees the connection end.
            let closed = try await accepted.waitForClose(timeout: .seconds(10))
            #expect(closed)
        }
    }

    @Test("a cancelled connect closes its connection while the upgrade is under way")
    func cancelled() async throws {
        try await SilentServer.with { port, accepted in
            let connector = WebSocketConnector(timeout: .seconds(30), logger: Self.logger)
            let task = Task { try await connector.connect(url: "ws://127.0.0.1:\(port)/") { _ in } }
            let connected = try await accepted.waitForAccept(timeout: .seconds(10))
            #expect(connected)
            task.cancel()
            let closed = try await accepted.waitForClose(timeout: .seconds(10))
            #expect(closed)
            await #expect(throws: (any Error).self) { try await task.value }
        }
    }

    @Test("a close from the client is answered by the bridge: the messages end and its close frame is kept")
    func closeFrame() async throws {
        try await TestBridge.with { port, _ in
            let connector = WebSocketConnector(timeout: WebSocketConnectorTests.handshakeBound, logger: Self.logger)
            let (answers, frame) = try await connector.connect(url: "ws://127.0.0.1:\(port)/") { connection in
                try await connection.send(text: HandshakeTests.seedInitialize)
                var answers = 0
                for try await message in connection.messages {
                    guard case .text = message else { continue }
                    answers += 1
                    try await connection.close(code: .normalClosure, reason: "done")
                }
                return (answers, connection.closeFrame)
            }
            #expect(answers == 1)
            #expect(frame?.code == 1000)
        }
    }

    @Test("a plain HTTP request by address, IPv6 literal included")
    func request() async throws {
        try await TestBridge.with(configure: { $0.host = "::1" }, { port, _ in
            let answer = try await WebSocketConnector(timeout: WebSocketConnectorTests.handshakeBound, logger: Self.logger).request("GET", url: "http://[::1]:\(port)/api/health")
            #expect(answer.status == 200)
            #expect(String(decoding: answer.body, as: UTF8.self).contains("ok"))
            #expect(answer.certificatePin == nil)
        })
    }
}
