import BridgeClient
import BridgePairing
import BridgeRPC
import BridgeServer
import Synchronization
import Testing

@Suite("serve listens dual-stack by default", .timeLimit(.minutes(1)), .tags(.loopback))
struct WebSocketConnectorDualStackTests {
    @Test("the default host takes IPv4 (as IPv4-mapped) and IPv6 on one socket; loopback stays loopback for both")
    func defaultHost() async throws {
        let host = BridgeServerConfiguration(serverName: "dual").host
        // This machine has IPv6 (::1 on lo); where it has not, the default is 0.0.0.0 and this test does not apply.
        try #require(host == "::", "IPv6 is off here: the default is \(host)")
        let peers = Mutex<[String]>([])
        try await TestBridge.with(configure: { configuration in
            configuration.host = host
            configuration.authorizeUpgrade = { request in
                peers.withLock { $0.append(request.remoteAddress ?? "?") }
                return .allow
            }
        }, { port, _ in
            let connector = WebSocketConnector(timeout: WebSocketConnectorTests.handshakeBound, logger: WebSocketConnectorTests.logger)
            for url in ["ws://127.0.0.1:\(port)/", "ws://[::1]:\(port)/"] {
                let answer = try await connector.connect(url: url) { try await WebSocketConnectorTests.initialize($0) }
                #expect(answer["result"]?["protocol_version"] != nil, "no answer on \(url)")
            }
        })
        let seen = peers.withLock { $0 }
        #expect(seen.count == 2)
        #expect(seen.allSatisfy { NetworkPolicy.isLoopback($0) }, "\(seen)")
    }
}
