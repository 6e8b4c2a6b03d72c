import BridgeRPC
import BridgeServer
import Foundation
import Testing

/// Issue 16's smaller findings: exact ids through the bridge, batch size, sessions per connection, replay bytes.
@Suite("Per-connection caps and exact ids", .timeLimit(.minutes(1)), .tags(.loopback))
struct ConnectionCapsTests {
    @Test("an id beyond 64 bits comes back byte for byte, in answers and in errors")
    func bigIDsThroughTheBridge() async throws {
        try await TestBridge.with { port, _ in
            try await TestClient.with(port: port) { client in
                try await client.initialize(seed: false)
                client.send(#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"session/cancel","params":{"sessionId":"none"}}"#)
                let text = try await client.nextText()
                #expect(text.contains(#""id":123456789012345678901234567890"#), "got \(text)")
                client.send(#"{"jsonrpc":"2.0","id":1.50,"method":"session/new","params":{}}"#)
                #expect(try await client.nextText().contains(#""id":1.50"#))
            }
        }
    }

    @Test("a batch over maxBatchSize gets one -32004 error and none of it runs; one at the limit runs")
    func batchLimit() async throws {
        try await TestBridge.with(configure: { $0.maxBatchSize = 5 }, { port, _ in
            try await TestClient.with(port: port) { client in
                try await client.initialize(seed: false)
                func batch(_ count: Int) -> String {
                    "[" + (0..<count).map { #"{"jsonrpc":"2.0","id":\#($0),"method":"_oa/nothing"}"# }.joined(separator: ",") + "]"
                }
                client.send(batch(6))
                let refused = try await client.next()
                #expect(refused["error"]?["code"] == .int(Int64(BridgeMethod.batchTooLargeErrorCode)))
                #expect(refused["error"]?["data"]?["limit"] == 5)
                #expect(refused["id"] == .null)
                client.send(batch(5))
                #expect(try await client.next().arrayValue?.count == 5)
            }
        })
    }

    @Test("a batch of 1,000 session/cancel requests is answered in full, in one array")
    func largeBatchAnswered() async throws {
        try await TestBridge.with { port, _ in
            try await TestClient.with(port: port) { client in
                try await client.initialize(seed: false)
                let entries = (0..<1000).map { #"{"jsonrpc":"2.0","id":\#($0),"method":"session/cancel","params":{"sessionId":"s"}}"# }
                client.send("[" + entries.joined(separator: ",") + "]")
                let answer = try await client.next(timeout: .seconds(20)).arrayValue ?? []
                #expect(answer.count == 1000)
                #expect(Set(answer.compactMap { $0["id"]?.intValue }).count == 1000)
            }
        }
    }

    @Test("past maxSessionsPerConnection, session/new gets -32003; another connection still can")
    func sessionLimit() async throws {
        try await TestBridge.with(configure: { $0.maxSessionsPerConnection = 3 }, { port, _ in
            try await TestClient.with(port: port) { client in
                try await client.initialize(seed: false)
                var sessions: [String] = []
                for index in 0..<3 { sessions.append(try await client.newSession(seed: false, id: .int(Int64(index)))) }
                client.send(#"{"jsonrpc":"2.0","id":"extra","method":"session/new","params":{}}"#)
                let refused = try await client.next { $0["id"] == "extra" }.0
                #expect(refused["error"]?["code"] == .int(Int64(BridgeMethod.tooManySessionsErrorCode)))
                #expect(refused["error"]?["data"]?["limit"] == 3)
                // Attaching again to one it has costs nothing.
                client.send(JSONValue.object(["jsonrpc": "2.0", "id": "again", "method": "_oa/session/resume",
                                              "params": ["sessionId": .string(sessions[0]), "lastSeq": 0]]))
                #expect(try await client.next { $0["id"] == "again" }.0["result"] != nil)
                try await TestClient.with(port: port) { other in
                    try await other.initialize(seed: false)
                    _ = try await other.newSession(seed: false)
                }
            }
        })
    }

    @Test("a batch of session/new cannot pass the limit either")
    func sessionLimitInOneBatch() async throws {
        try await TestBridge.with(configure: { $0.maxSessionsPerConnection = 2 }, { port, _ in
            try await TestClient.with(port: port) { client in
                try await client.initialize(seed: false)
                let entries = (0..<5).map { #"{"jsonrpc":"2.0","id":\#($0),"method":"session/new","params":{}}"# }
                client.send("[" + entries.joined(separator: ",") + "]")
                let answers = try await client.next().arrayValue ?? []
                #expect(answers.count == 5)
                #expect(answers.filter { $0["result"] != nil }.count == 2)
                #expect(answers.filter { $0["error"]?["code"] == .int(Int64(BridgeMethod.tooManySessionsErrorCode)) }.count == 3)
            }
        })
    }

    @Test("a session keeps at most replayBufferBytes of updates for resume, the newest")
    func replayBytes() async throws {
        try await TestBridge.with(configure: { $0.replayBufferBytes = 64 * 1024 }, { port, _ in
            let session = try await TestClient.with(port: port) { client in
                try await client.initialize(seed: false)
                let session = try await client.newSession(seed: false)
                // Each prompt echoes back one 20 KB word: 10 of them are 200 KB of updates.
                for index in 0..<10 {
                    client.prompt(seed: false, session: session, text: String(repeating: "x", count: 20_000), id: .int(Int64(index)))
                    let (ask, _) = try await client.next { $0["method"] == "session/request_permission" }
                    client.send(JSONValue.object(["jsonrpc": "2.0", "id": ask["id"] ?? .null,
                                                  "result": ["outcome": ["outcome": "selected", "optionId": "reject"]]]))
                    _ = try await client.collect(until: .int(Int64(index)))
                }
                return session
            }
            try await TestClient.with(port: port) { client in
                try await client.initialize(seed: false)
                client.send(JSONValue.object(["jsonrpc": "2.0", "id": "resume", "method": "_oa/session/resume",
                                              "params": ["sessionId": .string(session), "lastSeq": 0]]))
                let (answer, replayed) = try await client.next { $0["id"] == "resume" }
                // Not everything fits: the gap error says what is kept.
                #expect(answer["error"]?["code"] == .int(Int64(BridgeMethod.gapErrorCode)))
                let oldest = answer["error"]?["data"]?["oldestSeq"]?.intValue ?? 0
                #expect(oldest > 1)
                #expect(replayed.isEmpty)
                client.send(JSONValue.object(["jsonrpc": "2.0", "id": "tail", "method": "_oa/session/resume",
                                              "params": ["sessionId": .string(session), "lastSeq": .int(oldest - 1)]]))
                let (tail, updates) = try await client.next { $0["id"] == "tail" }
                #expect(tail["result"] != nil)
                let bytes = updates.reduce(0) { $0 + $1.jsonText.utf8.count }
                #expect(bytes <= 64 * 1024 + 4096, "replayed \(bytes) bytes")
                #expect(bytes >= 40_000, "the newest updates are kept (\(bytes) bytes)")
            }
        })
    }
}
