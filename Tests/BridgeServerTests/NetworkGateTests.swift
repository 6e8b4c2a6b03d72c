import BridgeRPC
import Foundation
import Testing
@testable import BridgeHTTP
@testable import BridgeServer

/// `--auth none` in a bridge: the configuration's networks and the loopback / allowed-network gate on a running server
/// (CIDR parsing and the gate itself: BridgeHTTPTests).
@Suite("The --auth none gate in a bridge", .timeLimit(.minutes(1)), .tags(.loopback))
struct NetworkGateTests {
    @Test("a malformed allowed network stops the server with a clear error")
    func badNetwork() async throws {
        var configuration = BridgeServerConfiguration(serverName: "t", workingDirectory: try TestBridge.makeDirectory())
        configuration.allowedNetworks = ["192.168.1.0/24", "lan"]
        #expect(throws: BridgeServerError.badNetwork("lan")) { try NetworkGate(for: configuration) }
    }

    @Test("without auth a loopback client upgrades and uses /api; the gate is on /api and the WebSocket")
    func loopbackAllowed() async throws {
        try await TestBridge.with(configure: { $0.allowedNetworks = ["10.0.0.0/8"] }, { port, _ in
            try await TestClient.with(port: port) { client in
                try await client.initialize(seed: false)
            }
            let health = try await LoopbackHTTP.request(port: port, "GET", "/api/health")
            #expect(health.status == 200)
        })
    }
}
