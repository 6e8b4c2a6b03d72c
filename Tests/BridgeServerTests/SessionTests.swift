import BridgeRPC
import BridgeServer
import Foundation
import Testing

@Suite("Sessions through the demo agent", .timeLimit(.minutes(1)), .tags(.loopback))
struct SessionTests {
    @Test("seed dialect: new session, prompt with streamed updates, permission round trip, end_turn — all snake_case", arguments: [true, false])
    func promptTurn(seed: Bool) async throws {
        try await TestBridge.with { port, _ in
            try await TestClient.with(port: port) { client in
                try await client.initialize(seed: seed)
                let session = try await client.newSession(seed: seed)
                client.prompt(seed: seed, session: session, text: "hello bridge")
                // Up to the permission request.
                let (ask, before) = try await client.next { $0["method"] == "session/request_permission" }
                let toolCallKey = seed ? "tool_call" : "toolCall"
                let optionKey = seed ? "option_id" : "optionId"
                let updateKey = seed ? "session_update" : "sessionUpdate"
                #expect(ask["params"]?[seed ? "session_id" : "sessionId"] == .string(session))
                #expect(ask["params"]?[toolCallKey]?["title"] == "Tell the time")
                #expect(ask["params"]?["options"]?.arrayValue?.first?[optionKey] == "allow")
                #expect(chunkText(before, seed: seed) == "You said: hello bridge")
                #expect(before.contains { $0["params"]?["update"]?[updateKey] == "tool_call" })
                // Every key in seed frames is snake_case (except _meta and free-form maps).
                if seed {
                    for frame in before + [ask] { #expect(!frame.jsonText.contains("sessionId"), "camelCase leaked: \(frame)") }
                }
                let answerID = try #require(ask["id"])
                client.send(JSONValue.object(["jsonrpc": "2.0", "id": answerID, "result": ["outcome": .object(["outcome": "selected", optionKey: "allow"])]]))
                let (done, after) = try await client.collect(until: "prompt")
                #expect(done["result"] == .object([seed ? "stop_reason" : "stopReason": "end_turn"]))
                let completed = after.first { $0["params"]?["update"]?[updateKey] == "tool_call_update" }
                #expect(completed?["params"]?["update"]?["status"] == "completed")
            }
        }
    }

    @Test("two clients on one session both get its updates and the permission request; the first answer wins; a third client sees nothing")
    func fanOut() async throws {
        try await TestBridge.with { port, _ in
            try await TestClient.with(port: port) { alice in
                try await TestClient.with(port: port) { bob in
                    try await TestClient.with(port: port) { carol in
                        try await alice.initialize(seed: true)
                        try await bob.initialize(seed: false)
                        try await carol.initialize(seed: false)
                        let session = try await alice.newSession(seed: true)
                        _ = try await carol.newSession(seed: false)
                        // Bob attaches to Alice's live session.
                        bob.send(JSONValue.object(["jsonrpc": "2.0", "id": 5, "method": "session/load", "params": ["sessionId": .string(session), "cwd": "/", "mcpServers": []]]))
                        let loaded = try await bob.next()
                        #expect(loaded["id"] == 5)
                        #expect(loaded["result"] != nil, "load failed: \(loaded)")

                        alice.prompt(seed: true, session: session, text: "one two three")
                        let (askAlice, aliceUpdates) = try await alice.next { $0["method"] == "session/request_permission" }
                        let (askBob, bobUpdates) = try await bob.next { $0["method"] == "session/request_permission" }
                        #expect(chunkText(aliceUpdates, seed: true) == "You said: one two three")
                        #expect(chunkText(bobUpdates, seed: false) == "You said: one two three")
                        #expect(askBob["params"]?["toolCall"] != nil)
                        #expect(askAlice["params"]?["tool_call"] != nil)

                        // Bob answers first; Alice is told.
                        bob.send(JSONValue.object(["jsonrpc": "2.0", "id": askBob["id"] ?? .null, "result": ["outcome": ["outcome": "selected", "optionId": "reject"]]]))
                        let (told, _) = try await alice.next { $0["method"] == "_oa/request_answered" }
                        #expect(told["params"]?["request_id"] == askAlice["id"])
                        // Alice's late answer changes nothing.
                        alice.send(JSONValue.object(["jsonrpc": "2.0", "id": askAlice["id"] ?? .null, "result": ["outcome": ["outcome": "selected", "option_id": "allow"]]]))
                        let (done, after) = try await alice.collect(until: "prompt")
                        #expect(done["result"]?["stop_reason"] == "end_turn")
                        let update = after.first { $0["params"]?["update"]?["session_update"] == "tool_call_update" }
                        #expect(update?["params"]?["update"]?["status"] == "failed")
                        // Bob got the same tool_call_update, Carol got nothing at all.
                        let (bobUpdate, _) = try await bob.next { $0["params"]?["update"]?["sessionUpdate"] == "tool_call_update" }
                        #expect(bobUpdate["params"]?["update"]?["status"] == "failed")
                        #expect(try await carol.receivesNothing(for: .milliseconds(200)))
                    }
                }
            }
        }
    }

    @Test("ids are rewritten per connection: two clients using the same id at once each get their own answer")
    func sameIDs() async throws {
        try await TestBridge.with { port, _ in
            try await TestClient.with(port: port) { alice in
                try await TestClient.with(port: port) { bob in
                    try await alice.initialize(seed: false)
                    try await bob.initialize(seed: false)
                    let first = try await alice.newSession(seed: false, id: 1)
                    let second = try await bob.newSession(seed: false, id: 1)
                    #expect(first != second)
                    alice.prompt(seed: false, session: first, text: "alpha", id: 1)
                    bob.prompt(seed: false, session: second, text: "beta", id: 1)
                    for (client, word) in [(alice, "alpha"), (bob, "beta")] {
                        let (ask, updates) = try await client.next { $0["method"] == "session/request_permission" }
                        #expect(chunkText(updates, seed: false) == "You said: \(word)")
                        client.send(JSONValue.object(["jsonrpc": "2.0", "id": ask["id"] ?? .null, "result": ["outcome": ["outcome": "selected", "optionId": "allow"]]]))
                    }
                    for client in [alice, bob] {
                        let (done, _) = try await client.collect(until: 1)
                        #expect(done["result"]?["stopReason"] == "end_turn")
                    }
                }
            }
        }
    }

    @Test("session/cancel as a request is answered; the pending permission is cancelled and the turn stops with cancelled")
    func cancel() async throws {
        try await TestBridge.with { port, _ in
            try await TestClient.with(port: port) { client in
                try await client.initialize(seed: false)
                let session = try await client.newSession(seed: false)
                client.prompt(seed: false, session: session, text: "please stop")
                _ = try await client.next { $0["method"] == "session/request_permission" }
                client.send(JSONValue.object(["jsonrpc": "2.0", "id": "c", "method": "session/cancel", "params": ["sessionId": .string(session)]]))
                var cancelAnswered = false
                var stopReason: JSONValue?
                let deadline = ContinuousClock.now + .seconds(10)
                while stopReason == nil || !cancelAnswered, ContinuousClock.now < deadline {
                    let frame = try await client.next()
                    if frame["id"] == "c" {
                        cancelAnswered = frame["result"] == .null
                    }
                    if frame["id"] == "prompt" { stopReason = frame["result"]?["stopReason"] }
                }
                #expect(cancelAnswered)
                #expect(stopReason == "cancelled")
                // As a notification it gets no answer.
                client.send(JSONValue.object(["jsonrpc": "2.0", "method": "session/cancel", "params": ["sessionId": .string(session)]]))
                #expect(try await client.receivesNothing(for: .milliseconds(200)))
            }
        }
    }

    @Test("a client cannot drive a session it is not attached to")
    func notAttached() async throws {
        try await TestBridge.with { port, _ in
            try await TestClient.with(port: port) { alice in
                try await TestClient.with(port: port) { mallory in
                    try await alice.initialize(seed: false)
                    try await mallory.initialize(seed: false)
                    let session = try await alice.newSession(seed: false)
                    mallory.prompt(seed: false, session: session, text: "hijack")
                    let answer = try await mallory.next()
                    #expect(answer["error"]?["code"] == .int(-32602))
                    mallory.prompt(seed: false, session: "no-such-session", text: "x")
                    #expect(try await mallory.next()["error"]?["code"] == .int(-32002))
                    #expect(try await alice.receivesNothing(for: .milliseconds(200)))
                }
            }
        }
    }

    @Test("session/set_mode is relayed and its current_mode_update reaches the client")
    func setMode() async throws {
        try await TestBridge.with { port, _ in
            try await TestClient.with(port: port) { client in
                try await client.initialize(seed: true)
                let session = try await client.newSession(seed: true)
                client.send(JSONValue.object(["jsonrpc": "2.0", "id": "m", "method": "session/set_mode", "params": ["session_id": .string(session), "mode_id": "quiet"]]))
                let (answer, before) = try await client.collect(until: "m")
                #expect(answer["result"] == [:])
                #expect(before.first?["params"]?["update"]?["current_mode_id"] == "quiet")
            }
        }
    }

    @Test("too many pending requests on one connection get -32001")
    func pendingLimit() async throws {
        try await TestBridge.with(configure: { $0.maxPendingRequests = 2 }, { port, _ in
            try await TestClient.with(port: port) { client in
                try await client.initialize(seed: false)
                let session = try await client.newSession(seed: false)
                // Each prompt waits on a permission nobody answers.
                client.prompt(seed: false, session: session, text: "a", id: 1)
                client.prompt(seed: false, session: session, text: "b", id: 2)
                client.prompt(seed: false, session: session, text: "c", id: 3)
                let (refused, _) = try await client.next { $0["id"] == 3 }
                #expect(refused["error"]?["code"] == .int(-32001))
            }
        })
    }

    @Test("a session's cwd must lie inside the bridge's working directory")
    func cwdConfined() async throws {
        try await TestBridge.with { port, configuration in
            try await TestClient.with(port: port) { client in
                try await client.initialize(seed: false)
                client.send(#"{"jsonrpc":"2.0","id":"x","method":"session/new","params":{"cwd":"/etc","mcpServers":[]}}"#)
                let answer = try await client.next()
                #expect(answer["error"]?["code"] == .int(-32602))
                let inside = configuration.workingDirectory + "/sub"
                try FileManager.default.createDirectory(atPath: inside, withIntermediateDirectories: true)
                _ = try await client.newSession(seed: false, cwd: inside)
            }
        }
    }
}
