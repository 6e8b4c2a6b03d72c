import BridgeClient
import BridgePairing
import BridgeRPC
import BridgeServer
import BridgeTLS
import Foundation
import Testing

@Suite("BridgeRPCClient through the connector: IPv6 literals, typed refusals, pinned TLS", .timeLimit(.minutes(1)), .tags(.loopback))
struct WebSocketConnectorRPCClientTests {
    @Test("ws://[::1]:port/ connects and initialize is answered (it failed at once with 'IPv6 address literals are not supported')")
    func ipv6() async throws {
        try await TestBridge.with(configure: { $0.host = "::1" }, { port, _ in
            let client = try await BridgeRPCClient.connect(
                to: "ws://[::1]:\(port)/",
                timeout: WebSocketConnectorTests.handshakeBound, logger: WebSocketConnectorTests.logger)
            defer { client.close() }
            let answer = try await client.request("initialize", params: ["protocol_version": "0.2.2", "client_capabilities": [:]])
            #expect(answer["protocol_version"] != nil)
            #expect(client.certificatePin == nil)
        })
    }

    @Test("a 401 to the upgrade is BridgeClientError.unauthorized, matched by type")
    func unauthorized() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("oa-bridge-rpc-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let authenticator = Authenticator(store: try TokenStore(directory: directory, logger: WebSocketConnectorTests.logger))
        try await TestBridge.with(configure: { $0.authorizeUpgrade = authenticator.upgradeAuthorizer() }, { port, _ in
            let error = await #expect(throws: BridgeClientError.self) {
                try await BridgeRPCClient.connect(
                    to: "ws://127.0.0.1:\(port)/",
                    timeout: WebSocketConnectorTests.handshakeBound, logger: WebSocketConnectorTests.logger)
            }
            guard case .unauthorized? = error else {
                Issue.record("expected unauthorized, got \(String(describing: error))")
                return
            }
        })
    }

    @Test("wss:// with the stored pin: messages cross and the pin is reported; another pin is a pinMismatch")
    func pinned() async throws {
        try await TLSTestServer.with { port, pin in
            let url = "wss://127.0.0.1:\(port)/"
            let client = try await BridgeRPCClient.connect(
                to: url, token: TLSTestServer.goodToken, pin: pin,
                timeout: WebSocketConnectorTests.handshakeBound, logger: WebSocketConnectorTests.logger)
            defer { client.close() }
            #expect(client.certificatePin == pin)
            // The echo server sends our notification back: it arrives as the bridge's own message.
            client.notify("_test/echo", params: ["n": 1])
            var iterator = client.incoming.makeAsyncIterator()
            let echoed = await iterator.next()
            guard case .notification(let notification)? = echoed else {
                Issue.record("expected the echoed notification, got \(String(describing: echoed))")
                return
            }
            #expect(notification.method == "_test/echo")

            let other = try CertificatePin(digest: Array(repeating: 3, count: 32))
            await #expect(throws: WebSocketConnectorError.pinMismatch(expected: other, seen: pin)) {
                try await BridgeRPCClient.connect(
                    to: url, token: TLSTestServer.goodToken, pin: other,
                    timeout: WebSocketConnectorTests.handshakeBound, logger: WebSocketConnectorTests.logger)
            }
        }
    }
}
