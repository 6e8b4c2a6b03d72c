import BridgeRPC
import BridgeServer
import BridgeSessionStore
import Foundation
import Testing

/// Sessions survive a restart of the bridge (issue 25 item 2) and prompts with an idempotency key run once (item 3):
/// two bridges one after the other on one state directory, with the built-in demo agent (which cannot load sessions).
@Suite("Sessions across a restart", .timeLimit(.minutes(1)), .tags(.loopback))
struct SessionRestartTests {
    /// A prompt with `_meta.oa.idempotencyKey`.
    static func keyedPrompt(session: String, text: String, key: String, id: JSONValue) -> JSONValue {
        [
            "jsonrpc": "2.0", "id": id, "method": "session/prompt",
            "params": ["sessionId": .string(session), "prompt": [["type": "text", "text": .string(text)]],
                       "_meta": ["oa": ["idempotencyKey": .string(key)]]],
        ]
    }

    /// Switches the demo agent's session to its Quiet mode (it echoes and asks nothing).
    static func quiet(_ phone: TestClient, _ session: String) async throws {
        phone.send(["jsonrpc": "2.0", "id": "quiet", "method": "session/set_mode", "params": ["sessionId": .string(session), "modeId": "quiet"]])
        let (answer, _) = try await phone.collect(until: "quiet")
        #expect(answer["error"] == nil, "\(answer)")
    }

    /// The bridge's records of prompts (`user_message_chunk` marked by the bridge) among `frames`.
    static func promptRecords(_ frames: [JSONValue]) -> [JSONValue] {
        frames.filter { $0["method"] == "session/update" && $0["params"]?["update"]?["sessionUpdate"] == "user_message_chunk" }
    }

    @Test("after a restart the phone resumes its session: the stored conversation, read-only, prompts refused with -32011")
    func restartReadOnly() async throws {
        let state = try TestBridge.makeDirectory()
        let work = try TestBridge.makeDirectory()
        let first = try SessionStore(directory: URL(fileURLWithPath: state))
        let (session, before) = try await TestBridge.with(configure: {
            $0.sessionStore = first
            $0.workingDirectory = work
        }, { port, _ in
            try await TestClient.with(port: port) { phone -> (String, [JSONValue]) in
                try await phone.initialize(seed: false)
                let session = try await phone.newSession(seed: false)
                try await SessionRestartTests.quiet(phone, session)
                phone.send(SessionRestartTests.keyedPrompt(session: session, text: "remember the tulips", key: "key-1", id: "p1"))
                let (answer, frames) = try await phone.collect(until: "p1")
                #expect(answer["result"]?["stopReason"] == "end_turn")
                return (session, frames.filter { $0["method"] == "session/update" })
            }
        })
        try await first.flush()
        #expect(before.count >= 2)

        let second = try SessionStore(directory: URL(fileURLWithPath: state))
        try await TestBridge.with(configure: {
            $0.sessionStore = second
            $0.workingDirectory = work
        }, { port, _ in
            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: false)
                // A prompt before attaching: -32002 as for an unknown session, so the client attaches again.
                phone.prompt(seed: false, session: session, text: "too early", id: "early")
                let (early, _) = try await phone.collect(until: "early")
                #expect(early["error"]?["code"] == -32002, "\(early)")
                #expect(early["error"]?["data"]?["restorable"] == true)
                phone.send(["jsonrpc": "2.0", "id": "r", "method": "_oa/session/resume", "params": ["sessionId": .string(session), "lastSeq": 0]])
                let (resumed, replayed) = try await phone.collect(until: "r")
                #expect(resumed["result"]?["_meta"]?["oa"]?["readOnly"]?["reason"] == "agent_restarted", "\(resumed)")
                #expect(resumed["result"]?["lastSeq"] == before.last?["params"]?["_meta"]?["seq"])
                // The very conversation of the first run, update for update.
                let updates = replayed.filter { $0["method"] == "session/update" }
                #expect(updates.first?["params"]?["update"]?["sessionUpdate"] == "current_mode_update")  // the Quiet mode
                #expect(updates.dropFirst().map { $0["params"] } == before.map { $0["params"] })
                #expect(ResumeTests.text(replayed).contains("tulips"))

                phone.prompt(seed: false, session: session, text: "still there?", id: "p2")
                let (refused, _) = try await phone.collect(until: "p2")
                #expect(refused["error"]?["code"] == -32011, "\(refused)")
                #expect(refused["error"]?["message"] == "session is read-only: the agent restarted and cannot load it")

                // The prompt of the first run, retried with its key: the stored answer, not a refusal nor a second run.
                phone.send(SessionRestartTests.keyedPrompt(session: session, text: "remember the tulips", key: "key-1", id: "p3"))
                let (stored, _) = try await phone.collect(until: "p3")
                #expect(stored["result"]?["stopReason"] == "end_turn", "\(stored)")

                // session/load answers the same way, with _meta.oa.readOnly.
                phone.send(["jsonrpc": "2.0", "id": "l", "method": "session/load", "params": ["sessionId": .string(session), "cwd": .string(work), "mcpServers": []]])
                let (loaded, _) = try await phone.collect(until: "l")
                #expect(loaded["result"]?["_meta"]?["oa"]?["readOnly"]?["reason"] == "agent_restarted", "\(loaded)")

                // session/list names it (the demo agent cannot list: the bridge's own list).
                phone.send(["jsonrpc": "2.0", "id": "list", "method": "session/list", "params": [:]])
                let (listed, _) = try await phone.collect(until: "list")
                let ids = listed["result"]?["sessions"]?.arrayValue?.compactMap { $0["sessionId"]?.stringValue } ?? []
                #expect(ids.contains(session), "\(listed)")
            }
        })
    }

    @Test("a retry while the prompt runs gets the same answer when it ends, and the agent sees the prompt once")
    func retryWhileRunning() async throws {
        let words = (1...60).map { "w\($0)" }.joined(separator: " ")
        try await TestBridge.with(configure: { $0.demoChunkDelay = .milliseconds(10) }, { port, _ in
            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: false)
                let session = try await phone.newSession(seed: false)
                try await SessionRestartTests.quiet(phone, session)
                phone.send(SessionRestartTests.keyedPrompt(session: session, text: words, key: "same", id: "first"))
                let (firstChunk, early) = try await phone.next { $0["method"] == "session/update" && $0["params"]?["update"]?["sessionUpdate"] == "agent_message_chunk" }
                phone.send(SessionRestartTests.keyedPrompt(session: session, text: words, key: "same", id: "retry"))
                // Both answers come when the prompt ends (the retry's may come first).
                let (firstAnswer, firstFrames) = try await phone.collect(until: "first")
                let (retryAnswer, between) = try firstFrames.contains(where: { $0["id"] == "retry" })
                    ? (try #require(firstFrames.first { $0["id"] == "retry" }), [])
                    : try await phone.collect(until: "retry")
                #expect(firstAnswer["result"] == retryAnswer["result"])
                #expect(firstAnswer["result"]?["stopReason"] == "end_turn")
                let everything = early + [firstChunk] + firstFrames + between
                #expect(SessionRestartTests.promptRecords(everything).count == 1)
                // The agent answered once: its words appear once.
                #expect(ResumeTests.text(everything).components(separatedBy: "w60").count - 1 == 1)
                // The agent never saw the bridge's `_meta.oa`; a bad key is refused before it is sent.
                phone.send(SessionRestartTests.keyedPrompt(session: session, text: "x", key: "", id: "bad"))
                let (bad, _) = try await phone.collect(until: "bad")
                #expect(bad["error"]?["code"] == -32602)
            }
        })
    }
}
