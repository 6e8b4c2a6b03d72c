import BridgeRPC
import BridgeServer
import Foundation
import Testing

/// `_oa/ping` (the web app's heartbeat) and the WebSocket endpoint at `/acp` beside `/` (issue 28 item 1).
@Suite("_oa/ping and the /acp path", .timeLimit(.minutes(1)), .tags(.loopback))
struct PingAndPathTests {
    @Test("_oa/ping is answered {} at once, before initialize and after")
    func ping() async throws {
        try await TestBridge.with { port, _ in
            try await TestClient.with(port: port) { phone in
                phone.send(#"{"jsonrpc":"2.0","id":"hb-1","method":"_oa/ping"}"#)
                let before = try await phone.next()
                #expect(before == ["jsonrpc": "2.0", "id": "hb-1", "result": [:]], "\(before)")
                try await phone.initialize(seed: true)
                phone.send(#"{"jsonrpc":"2.0","id":7,"method":"_oa/ping","params":{}}"#)
                let after = try await phone.next()
                #expect(after == ["jsonrpc": "2.0", "id": 7, "result": [:]], "\(after)")
            }
        }
    }

    @Test("the WebSocket endpoint answers at /acp too: same hub, same sessions as /")
    func acpPath() async throws {
        try await TestBridge.with { port, _ in
            try await TestClient.with(port: port, path: "/acp") { phone in
                try await phone.initialize(seed: false)
                let session = try await phone.newSession(seed: false)
                try await TestClient.with(port: port) { other in
                    try await other.initialize(seed: false)
                    let (loaded, _) = try await other.call("session/load", id: "l", ["sessionId": .string(session)])
                    #expect(loaded["result"] != nil, "a session made over /acp is the one / sees: \(loaded)")
                }
            }
        }
    }
}
