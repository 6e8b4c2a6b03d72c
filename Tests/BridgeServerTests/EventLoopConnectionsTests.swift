import BridgeTestKit
import Testing
@testable import BridgeServer

/// ``BridgeServerConfiguration/eventLoopConnections``: the first connections run on their event loop, the ones that
/// open while that many are open do not (the bridge says which at debug level).
@Suite(.tags(.loopback)) struct EventLoopConnectionsTests {
    static let onLoop = "connection runs on its event loop"

    @Test("only connections opened while at most eventLoopConnections are open run on their event loop")
    func threshold() async throws {
        let logs = TestLog()
        try await TestBridge.with(logs: logs, configure: { $0.eventLoopConnections = 1 }, { port, _ in
            try await TestClient.with(port: port) { first in
                try await first.initialize(seed: false)
                #expect(logs.count(of: Self.onLoop) == 1)
                try await TestClient.with(port: port) { second in
                    // Answered: the second connection's task runs, on the global executor.
                    try await second.initialize(seed: false)
                }
                #expect(logs.count(of: Self.onLoop) == 1)
            }
        })
    }

    @Test("with eventLoopConnections 0 no connection runs on its event loop; by default a first one does")
    func offAndDefault() async throws {
        for (limit, expected) in [(0, 0), (BridgeServerConfiguration(serverName: "t", workingDirectory: "/").eventLoopConnections, 1)] {
            let logs = TestLog()
            try await TestBridge.with(logs: logs, configure: { $0.eventLoopConnections = limit }, { port, _ in
                try await TestClient.with(port: port) { client in
                    try await client.initialize(seed: false)
                }
            })
            #expect(logs.count(of: Self.onLoop) == expected, "limit \(limit)")
        }
    }
}
