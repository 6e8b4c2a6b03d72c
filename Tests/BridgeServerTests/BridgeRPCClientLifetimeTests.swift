import BridgeClient
import Foundation
import Logging
import Testing

@Suite("BridgeRPCClient owns its connection task: nothing outlives the client or a cancelled open", .tags(.loopback))
struct BridgeRPCClientLifetimeTests {
    let logger = Logger(label: "test.rpc-client")

    @Test("an open cancelled mid-handshake closes its socket at once, not at its timeout")
    func cancelledOpen() async throws {
        try await SilentServer.with { port, events in
            let logger = self.logger
            let opening = Task {
                try await BridgeRPCClient.connect(to: "ws://127.0.0.1:\(port)/", timeout: .seconds(60), logger: logger)
            }
            // Bounds of 20 s against the open's 60 s: "at once" keeps a gap of seconds from "at its timeout" on a loaded
            // 2-core machine, whose parallel run stalls its first tests for 7–15 s.
            let accepted = try await events.waitForAccept(timeout: .seconds(20))
            #expect(accepted)
            opening.cancel()
            let closed = try await events.waitForClose(timeout: .seconds(20))
            #expect(closed, "the half-open connection stayed open after the cancelled open")
            _ = await opening.result
        }
    }

    @Test("a client dropped without close() is released, and its connection with it")
    func droppedClient() async throws {
        try await TestBridge.with { port, _ in
            weak var released: BridgeRPCClient?
            do {
                // 30 s: the open is not under test (its 5 s default ran out twice in the whole parallel run on 2 cores).
                let client = try await BridgeRPCClient.connect(to: "ws://127.0.0.1:\(port)/", timeout: .seconds(30), logger: logger)
                released = client
                #expect(client.closedReason == nil)
            }
            #expect(released == nil, "the connection task kept the client alive")
        }
    }
}
