import BridgeRPC
import BridgeServer
import BridgeTestKit
import Foundation
import Synchronization
import Testing

/// Resume without loss: `_meta.seq` on every update, the replay buffer, `_oa/session/resume`, prompts that outlive
/// their client, and the gap error.
@Suite("Resume without loss", .timeLimit(.minutes(1)), .tags(.loopback))
struct ResumeTests {
    /// The `_meta.seq` of a `session/update` frame.
    static func seq(_ frame: JSONValue) -> Int64? {
        frame["method"] == "session/update" ? frame["params"]?["_meta"]?["seq"]?.intValue : nil
    }

    /// The text of every message chunk, either dialect.
    static func text(_ frames: [JSONValue]) -> String {
        frames.compactMap { frame -> String? in
            let update = frame["params"]?["update"]
            guard frame["method"] == "session/update",
                  update?["sessionUpdate"] == "agent_message_chunk" || update?["session_update"] == "agent_message_chunk"
            else { return nil }
            return update?["content"]?["text"]?.stringValue
        }.joined()
    }

    @Test("a client that drops mid-prompt resumes on a new connection and ends with every update exactly once, in order")
    func resumeMidPrompt() async throws {
        let words = (1...120).map { "w\($0)" }.joined(separator: " ")
        try await TestBridge.with(configure: { $0.demoChunkDelay = .milliseconds(15) }, { port, _ in
            // The first connection (ACP v1) starts a long prompt and goes away after a few updates.
            let (session, firstPart) = try await TestClient.with(port: port) { phone -> (String, [JSONValue]) in
                try await phone.initialize(seed: false)
                let session = try await phone.newSession(seed: false)
                phone.prompt(seed: false, session: session, text: words)
                var seen: [JSONValue] = []
                while seen.count < 10 {
                    let (update, _) = try await phone.next { $0["method"] == "session/update" }
                    seen.append(update)
                }
                return (session, seen)
            }
            let lastSeen = try #require(firstPart.last.flatMap(Self.seq))
            #expect(firstPart.compactMap(Self.seq) == Array(1...lastSeen))
            #expect(firstPart.first?["params"]?["_meta"]?["seq"] == 1)

            // The same phone comes back on a new connection, in the seed dialect, and resumes.
            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: true)
                phone.send(JSONValue.object([
                    "jsonrpc": "2.0", "id": "resume", "method": "_oa/session/resume",
                    "params": ["session_id": .string(session), "last_seq": .int(lastSeen)],
                ]))
                var updates: [JSONValue] = []
                var resumeAnswer: JSONValue?
                var finished: JSONValue?
                let deadline = ContinuousClock.now + .seconds(20)
                while finished == nil || resumeAnswer == nil {
                    guard ContinuousClock.now < deadline else { throw TestClientError.timeout }
                    let frame = try await phone.next()
                    if frame["method"] == "session/update" {
                        updates.append(frame)
                    } else if frame["method"] == "session/request_permission", let id = frame["id"] {
                        #expect(frame["params"]?["session_id"] == .string(session))
                        phone.send(JSONValue.object([
                            "jsonrpc": "2.0", "id": id, "result": ["outcome": ["outcome": "selected", "option_id": "allow"]],
                        ]))
                    } else if frame["id"] == "resume" {
                        resumeAnswer = frame
                    } else if frame["method"] == "_oa/prompt_finished" {
                        finished = frame
                    }
                }
                let answer = try #require(resumeAnswer?["result"], "resume failed: \(String(describing: resumeAnswer))")
                #expect(answer["last_seq"]?.intValue ?? 0 >= lastSeen)
                #expect(answer["replayed"]?.intValue == (answer["last_seq"]?.intValue ?? 0) - lastSeen)
                #expect(answer["prompt_running"] == true)
                #expect(finished?["params"]?["stop_reason"] == "end_turn")
                #expect(finished?["params"]?["session_id"] == .string(session))

                // Every update exactly once, in order, across both connections.
                let all = firstPart + updates
                let seqs = all.compactMap(Self.seq)
                #expect(seqs.count == all.count)
                #expect(seqs == Array(1...Int64(seqs.count)))
                let text = Self.text(all)
                #expect(text.hasPrefix("You said: \(words) (The time is "), "got \(text)")
                #expect(updates.contains { $0["params"]?["update"]?["status"] == "completed" })

                // Resuming again afterwards: nothing more to replay, and the stop reason is reported.
                phone.send(JSONValue.object([
                    "jsonrpc": "2.0", "id": "again", "method": "_oa/session/resume",
                    "params": ["session_id": .string(session), "last_seq": .int(seqs.last ?? 0)],
                ]))
                let again = try await phone.next()
                #expect(again["result"]?["replayed"] == 0)
                #expect(again["result"]?["prompt_running"] == false)
                #expect(again["result"]?["finished_while_away"] == "end_turn")
            }
        })
    }

    @Test("with a tiny buffer, resuming from too far back is a gap error (-32002) that still attaches")
    func gap() async throws {
        try await TestBridge.with(configure: { $0.replayBufferSize = 3 }, { port, _ in
            let (session, latest) = try await TestClient.with(port: port) { phone -> (String, Int64) in
                try await phone.initialize(seed: false)
                let session = try await phone.newSession(seed: false)
                phone.prompt(seed: false, session: session, text: "one two three four five")
                var last: Int64 = 0
                while true {
                    let frame = try await phone.next()
                    if let seq = Self.seq(frame) { last = seq }
                    if frame["method"] == "session/request_permission", let id = frame["id"] {
                        phone.send(JSONValue.object(["jsonrpc": "2.0", "id": id, "result": ["outcome": ["outcome": "cancelled"]]]))
                    }
                    if frame["id"] == "prompt" { break }
                }
                return (session, last)
            }
            #expect(latest > 4)
            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: false)
                phone.send(JSONValue.object([
                    "jsonrpc": "2.0", "id": "resume", "method": "_oa/session/resume",
                    "params": ["sessionId": .string(session), "lastSeq": 0],
                ]))
                let answer = try await phone.next()
                let error = try #require(answer["error"], "expected a gap error: \(answer)")
                #expect(error["code"] == -32002)
                #expect(error["message"]?.stringValue?.hasPrefix("gap") == true)
                #expect(error["data"]?["oldestSeq"]?.intValue == latest - 2)
                #expect(error["data"]?["requestedAfter"] == 0)
                // Still attached: a prompt in the session is accepted, and its updates carry on from the last seq.
                phone.prompt(seed: false, session: session, text: "again")
                let (next, _) = try await phone.next { $0["method"] == "session/update" }
                #expect(Self.seq(next) == latest + 1)
                _ = try await phone.next { $0["method"] == "session/request_permission" }
                phone.send(#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"\#(session)"}}"#)
                let (done, during) = try await phone.collect(until: "prompt")
                #expect(done["result"]?["stopReason"] == "cancelled")
                let current = during.compactMap(Self.seq).last ?? (latest + 1)

                // Exactly at the edge of the buffer (the three newest): no gap.
                phone.send(JSONValue.object([
                    "jsonrpc": "2.0", "id": "edge", "method": "_oa/session/resume",
                    "params": ["sessionId": .string(session), "lastSeq": .int(current - 3)],
                ]))
                let (edge, replayed) = try await phone.next { $0["id"] == "edge" }
                #expect(edge["error"] == nil, "\(edge)")
                #expect(edge["result"]?["lastSeq"]?.intValue == current)
                #expect(edge["result"]?["replayed"] == 3)
                #expect(replayed.compactMap(Self.seq) == [current - 2, current - 1, current])
            }
        })
    }

    @Test("a permission nobody comes back to answer is cancelled after orphanedRequestTimeout; resume reports how the prompt ended")
    func orphanedPermission() async throws {
        let clock = ManualClock()
        let logs = TestLog()
        let timeout: Duration = .seconds(60)
        try await TestBridge.with(logs: logs, configure: {
            $0.orphanedRequestTimeout = timeout
            $0.clock = clock
        }, { port, _ in
            let session = try await TestClient.with(port: port) { phone -> String in
                try await phone.initialize(seed: false)
                let session = try await phone.newSession(seed: false)
                phone.prompt(seed: false, session: session, text: "ask me")
                _ = try await phone.next { $0["method"] == "session/request_permission" }
                return session
            }
            // The bridge has handled the phone's going away (the permission is orphaned from this instant on), and
            // both sweeps (orphaned requests, stuck clients) wait on the clock.
            try #require(await logs.waitFor("client disconnected"))
            try #require(await clock.waitForSleepers(2))
            // Just short of the timeout the sweep (which ran: it waits on the clock again) leaves the permission be.
            clock.advance(by: timeout - .seconds(1))
            try #require(await clock.waitForSleepers(2))
            #expect(logs.count(of: "nobody came back to answer the agent's request") == 0)
            // At the timeout it answers the permission `cancelled`, and the prompt ends while the phone is away.
            clock.advance(by: .seconds(1))
            #expect(await logs.waitFor("nobody came back to answer the agent's request"))
            try #require(await logs.waitFor("prompt finished while its client was away"))
            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: false)
                phone.send(JSONValue.object([
                    "jsonrpc": "2.0", "id": "resume", "method": "_oa/session/resume",
                    "params": ["sessionId": .string(session), "lastSeq": 0],
                ]))
                let (answer, replayed) = try await phone.next { $0["id"] == "resume" }
                #expect(answer["result"]?["promptRunning"] == false)
                #expect(answer["result"]?["finishedWhileAway"] == "cancelled")
                #expect(!replayed.contains { $0["method"] == "session/request_permission" }, "nothing left to ask")
                #expect(replayed.last?["params"]?["update"]?["status"] == "failed")
            }
        })
    }

    @Test("resume needs a known session and a lastSeq")
    func badResume() async throws {
        try await TestBridge.with { port, _ in
            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: false)
                phone.send(#"{"jsonrpc":"2.0","id":1,"method":"_oa/session/resume","params":{"sessionId":"nope","lastSeq":0}}"#)
                #expect(try await phone.next()["error"]?["data"]?["sessionId"] == "nope")
                phone.send(#"{"jsonrpc":"2.0","id":2,"method":"_oa/session/resume","params":{"sessionId":"nope"}}"#)
                #expect(try await phone.next()["error"]?["code"] == -32602)
            }
        }
    }
}
