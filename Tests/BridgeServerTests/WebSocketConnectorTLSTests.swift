import BridgeClient
import BridgeTLS
import Foundation
import Testing

@Suite("WebSocketConnector over TLS: the pin decides", .timeLimit(.minutes(1)), .tags(.loopback))
struct WebSocketConnectorTLSTests {
    /// Opens `wss://127.0.0.1:port/`, sends one text message and returns the echo and the pin the connection saw.
    static func echo(port: Int, pin: CertificatePin?, token: String? = TLSTestServer.goodToken) async throws -> (String, CertificatePin?) {
        let connector = WebSocketConnector(timeout: WebSocketConnectorTests.handshakeBound, logger: WebSocketConnectorTests.logger)
        return try await connector.connect(url: "wss://127.0.0.1:\(port)/", pin: pin, token: token) { connection in
            try await connection.send(text: "over tls")
            for try await message in connection.messages {
                if case .text(let text) = message { return (text, connection.certificatePin) }
            }
            throw TestClientError.closed
        }
    }

    @Test("the stored pin matches: the WebSocket opens and messages cross")
    func pinned() async throws {
        try await TLSTestServer.with { port, pin in
            let (text, seen) = try await Self.echo(port: port, pin: pin)
            #expect(text == "over tls")
            #expect(seen == pin)
        }
    }

    @Test("trust on first use: no stored pin, the connection reports the pin it saw so the caller can show and store it")
    func trustOnFirstUse() async throws {
        try await TLSTestServer.with { port, pin in
            let (_, seen) = try await Self.echo(port: port, pin: nil)
            #expect(seen == pin)
        }
    }

    @Test("another key than the pinned one: a hard failure naming both pins, before any request (and token) is sent")
    func wrongPin() async throws {
        try await TLSTestServer.with { port, pin in
            let other = try CertificatePin(digest: Array(repeating: 7, count: 32))
            let error = await #expect(throws: WebSocketConnectorError.self) {
                try await Self.echo(port: port, pin: other)
            }
            #expect(error == .pinMismatch(expected: other, seen: pin))
        }
    }

    @Test("over TLS, a refused upgrade still carries the bridge's status and JSON error")
    func refusedOverTLS() async throws {
        try await TLSTestServer.with { port, pin in
            let error = await #expect(throws: WebSocketConnectorError.self) {
                try await Self.echo(port: port, pin: pin, token: nil)
            }
            #expect(error == .upgradeRefused(status: 401, error: "token_missing", message: "send a token"))
        }
    }

    @Test("wss:// to a server that answers in plaintext: notTLS at once, not a timeout")
    func plaintextPeer() async throws {
        try await SilentServer.with(answer: "HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n") { port, _ in
            let connector = WebSocketConnector(timeout: .seconds(20), logger: WebSocketConnectorTests.logger)
            let started = ContinuousClock.now
            let error = await #expect(throws: WebSocketConnectorError.self) {
                try await connector.connect(url: "wss://127.0.0.1:\(port)/") { _ in }
            }
            guard case .notTLS? = error else {
                Issue.record("expected notTLS, got \(String(describing: error))")
                return
            }
            #expect(ContinuousClock.now - started < .seconds(10))
        }
    }

    @Test("a one-off HTTPS request (the pairing exchange's transport) is held to the pin as well")
    func request() async throws {
        try await TLSTestServer.with { port, pin in
            let connector = WebSocketConnector(timeout: WebSocketConnectorTests.handshakeBound, logger: WebSocketConnectorTests.logger)
            let answer = try await connector.request("POST", url: "https://127.0.0.1:\(port)/api/auth/exchange", pin: pin, body: Array("{}".utf8))
            #expect(answer.status == 401)
            #expect(String(decoding: answer.body, as: UTF8.self).contains("token_missing"))
            #expect(answer.certificatePin == pin)
            let other = try CertificatePin(digest: Array(repeating: 9, count: 32))
            await #expect(throws: WebSocketConnectorError.pinMismatch(expected: other, seen: pin)) {
                try await connector.request("POST", url: "https://127.0.0.1:\(port)/api/auth/exchange", pin: other, body: Array("{}".utf8))
            }
        }
    }
}
