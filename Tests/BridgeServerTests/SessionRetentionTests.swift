import BridgeRPC
import BridgeServer
import BridgeTestKit
import Foundation
import Testing

/// Bounded retention of idle sessions (issue 15 item 2): in count, in replay bytes and in idle time, the longest idle
/// first, a running prompt kept, `session/close` to an agent that supports it, and a clear error on resume.
///
/// Every timer runs on a ``ManualClock``.
@Suite("Session retention", .serialized, .timeLimit(.minutes(1)), .tags(.loopback))
struct SessionRetentionTests {
    /// A phone that creates a session (optionally runs `prompt` to its end), then goes away.
    static func leaveSession(port: Int, prompt: String? = nil) async throws -> String {
        try await TestClient.with(port: port) { phone in
            try await phone.initialize(seed: false)
            let session = try await phone.newSession(seed: false)
            if let prompt {
                phone.prompt(seed: false, session: session, text: prompt)
                #expect(try await phone.collect(until: "prompt").0["result"]?["stopReason"] == "end_turn")
            }
            return session
        }
    }

    @Test("past maxIdleSessions the longest idle session is dropped (not the oldest created), and the agent gets session/close")
    func countOldestIdleFirst() async throws {
        let clock = ManualClock()
        let logs = TestLog()
        let retention = SessionRetention(maxIdleSessions: 2, maxIdleReplayBytes: .max, idleTimeout: nil)
        try await RetentionAgent.bridge(close: true, retention: retention, clock: clock, logs: logs) { port in
            let first = try await Self.leaveSession(port: port)
            try #require(await logs.waitFor("client disconnected", times: 1))
            clock.advance(by: .seconds(1))
            let second = try await Self.leaveSession(port: port)
            try #require(await logs.waitFor("client disconnected", times: 2))
            clock.advance(by: .seconds(1))
            // The first session is used again: now the second has been idle the longest.
            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: false)
                #expect(try await phone.resumeSession(first, seed: false)["result"] != nil)
            }
            try #require(await logs.waitFor("client disconnected", times: 3))
            clock.advance(by: .seconds(1))
            let third = try await Self.leaveSession(port: port)
            try #require(await logs.waitFor("client disconnected", times: 4))
            #expect(await logs.waitFor("dropped an idle session"))

            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: false)
                let dropped = try await phone.resumeSession(second, seed: false)
                #expect(dropped["error"]?["code"] == .int(Int64(BridgeMethod.sessionDroppedErrorCode)), "got \(dropped)")
                #expect(dropped["error"]?["data"]?["reason"] == "max_idle_sessions")
                #expect(try await phone.resumeSession(first, seed: false, id: "r1")["result"] != nil)
                #expect(try await phone.resumeSession(third, seed: false, id: "r3")["result"] != nil)
                #expect(try await phone.agentLog()["closed"] == .array([.string(second)]))
            }
            #expect(logs.count(of: "dropped an idle session") == 1)
        }
    }

    @Test("past maxIdleReplayBytes the longest idle sessions are dropped until the idle replay buffers fit")
    func replayBytes() async throws {
        let clock = ManualClock()
        let logs = TestLog()
        // Each session below keeps one update of a little over 2,000 bytes: one fits, two do not.
        let retention = SessionRetention(maxIdleSessions: 64, maxIdleReplayBytes: 3_000, idleTimeout: nil)
        try await RetentionAgent.bridge(close: true, retention: retention, clock: clock, logs: logs) { port in
            let first = try await Self.leaveSession(port: port, prompt: "bytes 2000")
            try #require(await logs.waitFor("client disconnected", times: 1))
            clock.advance(by: .seconds(1))
            let second = try await Self.leaveSession(port: port, prompt: "bytes 2000")
            try #require(await logs.waitFor("client disconnected", times: 2))
            #expect(await logs.waitFor("dropped an idle session"))

            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: true)
                let dropped = try await phone.resumeSession(first, seed: true)
                #expect(dropped["error"]?["code"] == .int(Int64(BridgeMethod.sessionDroppedErrorCode)), "got \(dropped)")
                #expect(dropped["error"]?["data"]?["reason"] == "max_idle_replay_bytes")
                #expect(dropped["error"]?["data"]?["session_id"] == .string(first))
                let kept = try await phone.resumeSession(second, seed: true, id: "r2")
                // The bridge's record of the prompt and the agent's update (issue 28 item 4).
                #expect(kept["result"]?["replayed"] == 2, "got \(kept)")
            }
        }
    }

    @Test("a session idle for idleTimeout is dropped by the sweep on the hub's clock; one idle for less is kept")
    func idleTimeout() async throws {
        let clock = ManualClock()
        let logs = TestLog()
        let retention = SessionRetention(idleTimeout: .seconds(60))
        try await RetentionAgent.bridge(close: true, retention: retention, clock: clock, logs: logs) { port in
            let first = try await Self.leaveSession(port: port)
            try #require(await logs.waitFor("client disconnected", times: 1))
            // Every periodic timer of the bridge is armed by now.
            let armed = clock.sleeperCount
            clock.advance(by: .seconds(30))
            try #require(await clock.waitForSleepers(armed))
            #expect(logs.count(of: "dropped an idle session") == 0)
            let second = try await Self.leaveSession(port: port)
            try #require(await logs.waitFor("client disconnected", times: 2))
            clock.advance(by: .seconds(30))
            #expect(await logs.waitFor("dropped an idle session"))
            try #require(await clock.waitForSleepers(armed))

            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: false)
                let (loaded, _) = try await phone.call("session/load", id: "load", ["sessionId": .string(first), "mcpServers": []])
                #expect(loaded["error"]?["code"] == .int(Int64(BridgeMethod.sessionDroppedErrorCode)), "got \(loaded)")
                #expect(loaded["error"]?["data"]?["reason"] == "idle_timeout")
                #expect(try await phone.resumeSession(second, seed: false)["result"] != nil)
            }
            #expect(logs.count(of: "dropped an idle session") == 1)
        }
    }

    @Test("a session whose prompt still runs is not idle, even with room for no idle session; it is dropped once the prompt ends and nobody is attached")
    func runningPromptKept() async throws {
        let clock = ManualClock()
        let logs = TestLog()
        let retention = SessionRetention(maxIdleSessions: 0, idleTimeout: .seconds(60))
        try await RetentionAgent.bridge(close: true, retention: retention, clock: clock, logs: logs) { port in
            let session = try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: false)
                let session = try await phone.newSession(seed: false)
                phone.prompt(seed: false, session: session, text: "wait")
                return session
            }
            try #require(await logs.waitFor("client disconnected", times: 1))
            let armed = clock.sleeperCount
            clock.advance(by: .seconds(61))
            try #require(await clock.waitForSleepers(armed))
            #expect(logs.count(of: "dropped an idle session") == 0)

            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: false)
                let resumed = try await phone.resumeSession(session, seed: false)
                #expect(resumed["result"]?["promptRunning"] == true, "got \(resumed)")
                let (finished, before) = try await phone.call("_test/finish", id: "finish", ["sessionId": .string(session)])
                #expect(finished["result"] == [:])
                #expect(before.contains { $0["method"] == "_oa/prompt_finished" }, "got \(before)")
                // Still attached: not idle.
                #expect(logs.count(of: "dropped an idle session") == 0)
            }
            try #require(await logs.waitFor("client disconnected", times: 2))
            #expect(await logs.waitFor("dropped an idle session"))
            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: false)
                let dropped = try await phone.resumeSession(session, seed: false)
                #expect(dropped["error"]?["code"] == .int(Int64(BridgeMethod.sessionDroppedErrorCode)), "got \(dropped)")
            }
        }
    }

    @Test("session/close goes to the agent only if it advertises sessionCapabilities.close; every resume method of either dialect gets -32006",
          arguments: [true, false])
    func closeAndResumeErrors(agentCloses: Bool) async throws {
        let clock = ManualClock()
        let logs = TestLog()
        let retention = SessionRetention(maxIdleSessions: 0)
        try await RetentionAgent.bridge(close: agentCloses, retention: retention, clock: clock, logs: logs) { port in
            let session = try await Self.leaveSession(port: port)
            try #require(await logs.waitFor("client disconnected", times: 1))
            #expect(await logs.waitFor("dropped an idle session"))
            let code = JSONValue.int(Int64(BridgeMethod.sessionDroppedErrorCode))
            try await TestClient.with(port: port) { seed in
                try await seed.initialize(seed: true)
                let resumed = try await seed.resumeSession(session, seed: true)
                #expect(resumed["error"]?["code"] == code, "got \(resumed)")
                #expect(resumed["error"]?["data"]?["session_id"] == .string(session))
                #expect(resumed["error"]?["data"]?["reason"] == "max_idle_sessions")
                let (loaded, _) = try await seed.call("session/load", id: "load", ["session_id": .string(session), "mcp_servers": []])
                #expect(loaded["error"]?["code"] == code, "got \(loaded)")
                let log = try await seed.agentLog()
                #expect(log["closed"] == .array(agentCloses ? [.string(session)] : []))
                #expect(log["methods"]?.arrayValue?.contains("session/close") == agentCloses)
            }
            try await TestClient.with(port: port) { official in
                try await official.initialize(seed: false)
                let (resumed, _) = try await official.call("session/resume", id: "resume", [
                    "sessionId": .string(session), "cwd": "/", "mcpServers": [],
                ])
                #expect(resumed["error"]?["code"] == code, "got \(resumed)")
                #expect(resumed["error"]?["data"]?["sessionId"] == .string(session))
                #expect(try await official.resumeSession(session, seed: false, id: "oa")["error"]?["code"] == code)
            }
        }
    }

    @Test("an agent that never answers session/close leaves at most 64 of them waiting (the oldest forgotten)")
    func unansweredClosesBounded() async throws {
        let clock = ManualClock()
        let logs = TestLog()
        let limit = 64  // BridgeHub.maxUnansweredCloses
        try await RetentionAgent.bridge(close: true, silent: true, retention: SessionRetention(maxIdleSessions: 0), clock: clock, logs: logs) { port in
            // 65 sessions, 13 on each of five phones (a connection may hold 64); each is dropped once its phone leaves.
            for phoneIndex in 0..<5 {
                try await TestClient.with(port: port) { phone in
                    try await phone.initialize(seed: false)
                    for index in 0..<13 { _ = try await phone.newSession(seed: false, id: .string("new\(index)")) }
                }
                try #require(await logs.waitFor("client disconnected", times: phoneIndex + 1))
            }
            #expect(await logs.waitFor("dropped an idle session", times: limit + 1))
            #expect(logs.count(of: "the agent has not answered session/close for dropped sessions; forgetting the oldest") == 1)
        }
    }

    @Test("requests of a client that went away are released (the agent gets $/cancel_request), all but its running prompt")
    func requestsReleasedOnDisconnect() async throws {
        let clock = ManualClock()
        let logs = TestLog()
        try await RetentionAgent.bridge(close: true, retention: SessionRetention(), clock: clock, logs: logs) { port in
            let session = try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: false)
                let session = try await phone.newSession(seed: false)
                phone.prompt(seed: false, session: session, text: "wait")
                for index in 0..<3 {
                    phone.send(JSONValue.object(["jsonrpc": "2.0", "id": .int(Int64(index)), "method": "_test/never", "params": [:]]))
                }
                // The agent has all three (and the prompt) once it answers what comes after them.
                let log = try await phone.agentLog()
                #expect(log["methods"]?.arrayValue?.filter { $0 == "_test/never" }.count == 3)
                return session
            }
            try #require(await logs.waitFor("client disconnected", times: 1))
            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: false)
                #expect(try await phone.agentLog()["cancelled"]?.arrayValue?.count == 3)
                #expect(try await phone.resumeSession(session, seed: false)["result"]?["promptRunning"] == true)
            }
        }
    }
}
