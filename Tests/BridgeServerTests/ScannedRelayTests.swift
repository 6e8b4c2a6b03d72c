import BridgeRPC
import BridgeServer
import BridgeTestKit
import Foundation
import Testing

/// The relay of `session/update`s the agent reader scanned instead of parsing (official clients only): every client
/// gets the same spliced frame with an unbroken seq, updates that change the session's kept state still change it,
/// and a seed client resuming later gets them all in its spelling.
@Suite("Relay of scanned updates", .timeLimit(.minutes(1)), .tags(.loopback))
struct ScannedRelayTests {
    /// The agent's `session/update` lines, each as written here.
    static let lines: [[UInt8]] = [
        #"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"one \u00e9"}}}}"#,
        #"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"current_mode_update","currentModeId":"fast"}}}"#,
        #"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"nobody","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"lost"}}}}"#,
        #"{"jsonrpc":"2.0","method":"session/update","params":{"update":{"content":{"text":"three","type":"text"},"sessionUpdate":"agent_message_chunk"},"sessionId":"s1"}}"#,
    ].map { Array($0.utf8) }

    /// An agent with one session, `s1` (mode `slow`), that answers a prompt with a chunk, a mode change to `fast`, a
    /// chunk for a session it never created, and a last chunk, each line written as a stdio agent writes it
    /// (``ScriptedAgent/Peer/write(line:)``: the bytes go through the stdio agent's scan, no process needed).
    static func agent() -> ScriptedAgent {
        SplicedRelayTests.relayAgent(name: "scan", lines: lines, session: [
            "sessionId": "s1",
            "modes": ["currentModeId": "slow", "availableModes": [["id": "slow", "name": "Slow"], ["id": "fast", "name": "Fast"]]],
        ])
    }

    @Test("official clients get one spliced frame per update, seq unbroken; a mode change is kept; a seed client resuming gets all")
    func scannedRelay() async throws {
        try await TestBridge.with(configure: { $0.inProcessAgent = { Self.agent() } }, { port, _ in
            try await TestClient.with(port: port) { first in
                try await first.initialize(seed: false)
                let session = try await first.newSession(seed: false)
                try await TestClient.with(port: port) { second in
                    try await second.initialize(seed: false)
                    #expect(try await second.resumeSession(session, seed: false)["result"]?["replayed"] == 0)
                    // An empty prompt: the bridge records no user_message_chunk for it (issue 28 item 4), so the
                    // agent's updates are seq 1, 2, 3… as written below.
                    first.send(JSONValue.object([
                        "jsonrpc": "2.0", "id": "prompt", "method": "session/prompt", "params": ["sessionId": .string(session), "prompt": []],
                    ]))
                    let live = try await SplicedRelayTests.updates(first, until: "prompt")
                    try #require(live.count == 3)
                    #expect(live[0] == #"{"jsonrpc":"2.0","method":"session/update","params":{"_meta":{"seq":1},"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"one \u00e9"}}}}"#)
                    #expect(live[2] == #"{"jsonrpc":"2.0","method":"session/update","params":{"_meta":{"seq":3},"update":{"content":{"text":"three","type":"text"},"sessionUpdate":"agent_message_chunk"},"sessionId":"s1"}}"#)
                    let mode = try JSONValue(parsing: live[1])
                    #expect(mode["params"]?["_meta"]?["seq"] == 2)
                    #expect(mode["params"]?["update"]?["currentModeId"] == "fast")
                    var others: [JSONValue] = []
                    while others.count < 3 {
                        let (frame, _) = try await second.next { $0["method"] == "session/update" }
                        others.append(frame)
                    }
                    #expect(others == live.map { try? JSONValue(parsing: $0) })

                    // The mode change was kept, and a seed client loading the session gets every update again, in its spelling.
                    try await TestClient.with(port: port) { seed in
                        try await seed.initialize(seed: true)
                        seed.send(JSONValue.object([
                            "jsonrpc": "2.0", "id": "load", "method": "session/load", "params": ["session_id": .string(session), "cwd": "/", "mcp_servers": []],
                        ]))
                        let (answer, replayed) = try await seed.collect(until: "load")
                        let modes = answer["result"]?["modes"]
                        #expect((modes?["current_mode_id"] ?? modes?["currentModeId"]) == "fast", "\(answer)")
                        let updates = replayed.filter { $0["method"] == "session/update" }
                        #expect(updates.map { $0["params"]?["_meta"]?["seq"] } == [1, 2, 3])
                        #expect(updates.first?["params"]?["update"]?["content"]?["text"] == "one é")
                        #expect(updates.first?["params"]?["session_id"] == "s1")
                        #expect(updates.last?["params"]?["update"]?["session_update"] == "agent_message_chunk")
                    }
                }
            }
        })
    }
}
