import BridgeRPC
import BridgeServer
import HummingbirdWSClient
import NIOWebSocket
import Testing

@Suite("One client's trouble is not another's", .timeLimit(.minutes(1)), .tags(.loopback))
struct IsolationTests {
    @Test("garbage and an oversized frame from one client leave another client's turn intact")
    func garbageElsewhere() async throws {
        try await TestBridge.with(configure: { $0.maxFrameSize = 4096 }, { port, _ in
            try await TestClient.with(port: port) { good in
                try await good.initialize(seed: true)
                let session = try await good.newSession(seed: true)
                try await TestClient.with(port: port) { (bad: TestClient) async throws -> Void in
                    bad.send("{not json")
                    #expect(try await bad.next()["error"]?["code"] == .int(-32700))
                    bad.send(#"{"jsonrpc":"2.0","method":"session/prompt","id":1,"params":{"session_id":"x"}}"#)
                    #expect(try await bad.next()["error"]?["code"] == .int(-32600))
                    bad.send(String(repeating: "z", count: 100_000))
                    #expect(try await bad.waitForEnd()?.closeCode == .messageTooLarge)
                }
                good.prompt(seed: true, session: session, text: "still here")
                let (ask, updates) = try await good.next { $0["method"] == "session/request_permission" }
                #expect(chunkText(updates, seed: true) == "You said: still here")
                good.send(JSONValue.object(["jsonrpc": "2.0", "id": ask["id"] ?? .null, "result": ["outcome": ["outcome": "selected", "option_id": "allow"]]]))
                #expect(try await good.collect(until: "prompt").0["result"]?["stop_reason"] == "end_turn")
            }
        })
    }

    @Test("a client that disconnects mid-turn does not break the session for the other attached client")
    func disconnectMidTurn() async throws {
        try await TestBridge.with { port, _ in
            try await TestClient.with(port: port) { stayer in
                try await stayer.initialize(seed: false)
                let session = try await TestClient.with(port: port) { leaver in
                    try await leaver.initialize(seed: true)
                    let session = try await leaver.newSession(seed: true)
                    stayer.send(JSONValue.object(["jsonrpc": "2.0", "id": "load", "method": "session/load", "params": ["sessionId": .string(session), "cwd": "/", "mcpServers": []]]))
                    #expect(try await stayer.collect(until: "load").0["result"] != nil)
                    leaver.prompt(seed: true, session: session, text: "bye now")
                    _ = try await leaver.next { $0["method"] == "session/request_permission" }
                    return session
                }
                // The leaver is gone, its prompt still runs; the stayer answers the permission and sees the turn end.
                let (ask, _) = try await stayer.next { $0["method"] == "session/request_permission" }
                stayer.send(JSONValue.object(["jsonrpc": "2.0", "id": ask["id"] ?? .null, "result": ["outcome": ["outcome": "selected", "optionId": "allow"]]]))
                let (update, _) = try await stayer.next { $0["params"]?["update"]?["sessionUpdate"] == "tool_call_update" }
                #expect(update["params"]?["update"]?["status"] == "completed")
                // And the stayer can drive the session itself.
                stayer.prompt(seed: false, session: session, text: "mine now", id: "p2")
                let (ask2, updates) = try await stayer.next { $0["method"] == "session/request_permission" }
                #expect(chunkText(updates, seed: false).hasSuffix("You said: mine now"))
                stayer.send(JSONValue.object(["jsonrpc": "2.0", "id": ask2["id"] ?? .null, "result": ["outcome": ["outcome": "selected", "optionId": "allow"]]]))
                #expect(try await stayer.collect(until: "p2").0["result"]?["stopReason"] == "end_turn")
            }
        }
    }
}
