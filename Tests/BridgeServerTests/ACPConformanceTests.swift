import BridgeRPC
import BridgeServer
import BridgeTestKit
import BridgeWorkspace
import Foundation
import Testing

/// The scripted agent written with the official ACP Python SDK (`Tests/system/agents/acp_script_agent.py`).
enum ScriptAgent {
    static let path: String = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("system/agents/acp_script_agent.py").path

    /// A bridge running the scripted agent (with `configure` applied after).
    static func bridge<T: Sendable>(
        logs: TestLog? = nil,
        configure: @escaping (inout BridgeServerConfiguration) -> Void = { _ in },
        _ body: @Sendable (_ port: Int, _ configuration: BridgeServerConfiguration) async throws -> T
    ) async throws -> T {
        let python = try #require(ACPPython.path)
        return try await TestBridge.with(logs: logs, configure: {
            $0.agentCommand = [python, ScriptAgent.path]
            configure(&$0)
        }, body)
    }
}

extension TestClient {
    /// Sends a request (params in whatever spelling the test chose) and waits for its answer; returns it and the
    /// frames before it.
    func call(_ method: String, id: JSONValue, _ params: JSONValue) async throws -> (JSONValue, [JSONValue]) {
        send(JSONValue.object(["jsonrpc": "2.0", "id": id, "method": .string(method), "params": params]))
        return try await collect(until: id)
    }

    /// `initialize` advertising form elicitation (`clientCapabilities.elicitation`), in either dialect.
    @discardableResult
    func initializeWithElicitation(seed: Bool) async throws -> JSONValue {
        if seed {
            send(#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocol_version":"0.2.2","client_capabilities":{"elicitation":{"form":{}}}}}"#)
        } else {
            send(#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"elicitation":{"form":{}}}}}"#)
        }
        let answer = try await next()
        return try #require(answer["result"], "initialize failed: \(answer)")
    }

    /// Answers a request of the agent with a result.
    func answer(_ request: JSONValue, result: JSONValue) {
        send(JSONValue.object(["jsonrpc": "2.0", "id": request["id"] ?? .null, "result": result]))
    }

    /// Answers a request of the agent with an error.
    func answer(_ request: JSONValue, errorCode: Int64) {
        send(JSONValue.object(["jsonrpc": "2.0", "id": request["id"] ?? .null, "error": ["code": .int(errorCode), "message": "no"]]))
    }
}

/// Every ACP v1 method a real agent uses, relayed faithfully (issue 12), against an agent written with the official
/// Python SDK, from both dialects and with two phones at once.
@Suite("ACP conformance through the bridge (scripted Python SDK agent)", .serialized, .timeLimit(.minutes(1)),
       .enabled(if: ACPPython.path != nil, "needs a Python with agent-client-protocol (set OA_BRIDGE_ACP_PYTHON or create .venv)"),
       .tags(.loopback, .externalTool))
struct ACPConformanceTests {
    // MARK: session lifecycle (item 1)

    @Test("session/resume from a second phone on another connection attaches it, replays what it missed after _meta.lastSeq, and routes later updates")
    func resumeFromSecondPhone() async throws {
        try await ScriptAgent.bridge { port, configuration in
            try await TestClient.with(port: port) { alice in
                try await TestClient.with(port: port) { bob in
                    try await alice.initialize(seed: true)
                    try await bob.initialize(seed: false)
                    let session = try await alice.newSession(seed: true)
                    alice.prompt(seed: true, session: session, text: "first words")
                    let (_, first) = try await alice.collect(until: "prompt")
                    #expect(chunkText(first, seed: true) == "heard: first words")

                    let (resumed, replayed) = try await bob.call("session/resume", id: "r", [
                        "sessionId": .string(session), "cwd": .string(configuration.workingDirectory), "mcpServers": [],
                        "_meta": ["lastSeq": 1],
                    ])
                    let result = try #require(resumed["result"], "resume refused: \(resumed)")
                    #expect(result["modes"]?["currentModeId"] == "ask")
                    #expect(result["_meta"]?["replayed"] == .int(Int64(replayed.count)))
                    #expect(chunkText(replayed, seed: false) == "heard: first words", "the update after seq 1 is replayed")
                    #expect(!replayed.contains { $0["params"]?["update"]?["sessionUpdate"] == "available_commands_update" }, "seq 1 is not")

                    alice.prompt(seed: true, session: session, text: "second", id: "p2")
                    _ = try await alice.collect(until: "p2")
                    let (chunk, _) = try await bob.next { $0["params"]?["update"]?["sessionUpdate"] == "agent_message_chunk" }
                    #expect(chunk["params"]?["update"]?["content"]?["text"] == "heard: second")
                }
            }
        }
    }

    @Test("session/load of a live session from a second (seed) phone replays the history the bridge holds, then answers with the present modes")
    func loadLiveFromSecondPhone() async throws {
        try await ScriptAgent.bridge { port, _ in
            try await TestClient.with(port: port) { alice in
                try await TestClient.with(port: port) { bob in
                    try await alice.initialize(seed: false)
                    try await bob.initialize(seed: true)
                    let session = try await alice.newSession(seed: false)
                    alice.prompt(seed: false, session: session, text: "history")
                    _ = try await alice.collect(until: "prompt")
                    let (loaded, replayed) = try await bob.call("session/load", id: "l", ["session_id": .string(session), "mcp_servers": []])
                    #expect(loaded["result"]?["modes"]?["current_mode_id"] == "ask", "\(loaded)")
                    #expect(chunkText(replayed, seed: true) == "heard: history")
                    #expect(replayed.first?["params"]?["update"]?["session_update"] == "available_commands_update")
                }
            }
        }
    }

    @Test("session/resume of a session the bridge does not run is forwarded to the agent and attaches the phone")
    func resumeStored() async throws {
        try await ScriptAgent.bridge { port, configuration in
            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: false)
                let (resumed, _) = try await phone.call("session/resume", id: "r", [
                    "sessionId": "stored-1", "cwd": .string(configuration.workingDirectory), "mcpServers": [],
                ])
                #expect(resumed["result"]?["modes"]?["currentModeId"] == "code", "\(resumed)")
                phone.prompt(seed: false, session: "stored-1", text: "back again")
                let (done, updates) = try await phone.collect(until: "prompt")
                #expect(done["result"]?["stopReason"] == "end_turn")
                #expect(chunkText(updates, seed: false) == "heard: back again")
            }
        }
    }

    @Test("session/fork registers the new session: its early update arrives before the answer, and its prompts are routed")
    func fork() async throws {
        try await ScriptAgent.bridge { port, configuration in
            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: true)
                let session = try await phone.newSession(seed: true)
                let (forked, before) = try await phone.call("session/fork", id: "f", [
                    "session_id": .string(session), "cwd": .string(configuration.workingDirectory), "mcp_servers": [],
                ])
                let newID = try #require(forked["result"]?["session_id"]?.stringValue, "fork failed: \(forked)")
                #expect(before.contains { $0["params"]?["session_id"] == .string(newID) && $0["params"]?["update"]?["session_update"] == "available_commands_update" })
                phone.prompt(seed: true, session: newID, text: "in the fork")
                let (done, updates) = try await phone.collect(until: "prompt")
                #expect(done["result"]?["stop_reason"] == "end_turn", "\(done)")
                #expect(chunkText(updates, seed: true) == "heard: in the fork")
            }
        }
    }

    @Test("session/close from a phone not attached closes it: the bridge forgets it and the attached phone is told")
    func closeFromAnotherPhone() async throws {
        try await ScriptAgent.bridge { port, _ in
            try await TestClient.with(port: port) { alice in
                try await TestClient.with(port: port) { bob in
                    try await alice.initialize(seed: true)
                    try await bob.initialize(seed: false)
                    let session = try await alice.newSession(seed: true)
                    let (closed, _) = try await bob.call("session/close", id: "c", ["sessionId": .string(session)])
                    #expect(closed["result"] == [:], "\(closed)")
                    let (told, _) = try await alice.next { $0["method"] == "_oa/session_closed" }
                    #expect(told["params"]?["session_id"] == .string(session))
                    alice.prompt(seed: true, session: session, text: "still there?")
                    let (refused, _) = try await alice.collect(until: "prompt")
                    #expect(refused["error"]?["code"] == -32002, "the bridge no longer knows the session: \(refused)")
                }
            }
        }
    }

    @Test("session/delete of a stored session the bridge never ran reaches the agent")
    func deleteStored() async throws {
        try await ScriptAgent.bridge { port, _ in
            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: true)
                let (deleted, _) = try await phone.call("session/delete", id: "d", ["session_id": "stored-1"])
                #expect(deleted["result"] == [:], "\(deleted)")
                let (log, _) = try await phone.call("_test/log", id: "log", [:])
                #expect(log["result"]?["deleted"] == ["stored-1"])
            }
        }
    }

    // MARK: no request hangs (item 3), $/cancel_request (item 4)

    @Test("the first success wins: one phone's error does not beat another phone's answer")
    func firstSuccessWins() async throws {
        try await ScriptAgent.bridge { port, _ in
            try await TestClient.with(port: port) { alice in
                try await TestClient.with(port: port) { bob in
                    try await alice.initialize(seed: false)
                    try await bob.initialize(seed: true)
                    let session = try await alice.newSession(seed: false)
                    _ = try await bob.call("session/load", id: "l", ["session_id": .string(session)])
                    alice.prompt(seed: false, session: session, text: "ask")
                    let (askAlice, _) = try await alice.next { $0["method"] == "_test/ask" }
                    let (askBob, _) = try await bob.next { $0["method"] == "_test/ask" }
                    alice.answer(askAlice, errorCode: -32603)
                    #expect(try await bob.receivesNothing(for: .milliseconds(200)), "bob may still answer")
                    bob.answer(askBob, result: ["ok": true])
                    let (done, updates) = try await alice.collect(until: "prompt")
                    #expect(done["result"]?["stopReason"] == "end_turn")
                    #expect(chunkText(updates, seed: false) == #"ask {"ok": true}"#)
                }
            }
        }
    }

    @Test("a request nobody answers gets a JSON-RPC error after clientRequestTimeout; a permission waits the longer permissionRequestTimeout")
    func unansweredRequests() async throws {
        let clock = ManualClock()
        let logs = TestLog()
        try await ScriptAgent.bridge(logs: logs, configure: {
            $0.clock = clock
            $0.clientRequestTimeout = .seconds(30)
            $0.permissionRequestTimeout = .seconds(600)
        }, { port, _ in
            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: false)
                let session = try await phone.newSession(seed: false)
                phone.prompt(seed: false, session: session, text: "ask")
                _ = try await phone.next { $0["method"] == "_test/ask" }
                try #require(await clock.waitForSleepers(2))
                clock.advance(by: .seconds(30))
                let (told, _) = try await phone.next { $0["method"] == "_oa/request_answered" }
                #expect(told["params"]?["outcome"] == "timeout")
                let (done, updates) = try await phone.collect(until: "prompt")
                #expect(done["result"]?["stopReason"] == "end_turn")
                #expect(chunkText(updates, seed: false).hasPrefix("ask error: -32603 "))

                phone.prompt(seed: false, session: session, text: "permission", id: "p2")
                _ = try await phone.next { $0["method"] == "session/request_permission" }
                try #require(await clock.waitForSleepers(2))
                clock.advance(by: .seconds(30))
                try #require(await clock.waitForSleepers(2))
                #expect(try await phone.receivesNothing(for: .milliseconds(300)), "a permission is not cut off at the short timeout")
                clock.advance(by: .seconds(570))
                let (done2, updates2) = try await phone.collect(until: "p2")
                #expect(done2["result"]?["stopReason"] == "end_turn")
                #expect(chunkText(updates2, seed: false).hasPrefix("permission error: -32603"))
            }
        })
    }

    @Test("session/cancel settles every pending request of the session, not only permissions")
    func cancelSettlesEverything() async throws {
        try await ScriptAgent.bridge { port, _ in
            try await TestClient.with(port: port) { phone in
                try await phone.initializeWithElicitation(seed: true)
                let session = try await phone.newSession(seed: true)
                phone.prompt(seed: true, session: session, text: "elicit")
                let (ask, _) = try await phone.next { $0["method"] == "elicitation/create" }
                phone.send(JSONValue.object(["jsonrpc": "2.0", "method": "session/cancel", "params": ["session_id": .string(session)]]))
                let (cancelled, _) = try await phone.next { $0["method"] == "$/cancel_request" }
                #expect(cancelled["params"]?["request_id"] == ask["id"])
                let (done, updates) = try await phone.collect(until: "prompt")
                #expect(done["result"]?["stop_reason"] == "end_turn")
                #expect(chunkText(updates, seed: true) == "elicit error: -32800")
            }
        }
    }

    @Test("the agent's $/cancel_request reaches each phone under the id that phone was asked with, and the agent gets -32800")
    func agentCancelRequest() async throws {
        try await ScriptAgent.bridge { port, _ in
            try await TestClient.with(port: port) { alice in
                try await TestClient.with(port: port) { bob in
                    try await alice.initialize(seed: false)
                    try await bob.initialize(seed: true)
                    let session = try await alice.newSession(seed: false)
                    _ = try await bob.call("session/load", id: "l", ["session_id": .string(session)])
                    alice.prompt(seed: false, session: session, text: "cancel-ask")
                    let (askAlice, _) = try await alice.next { $0["method"] == "_test/ask" }
                    let (askBob, _) = try await bob.next { $0["method"] == "_test/ask" }
                    let (toAlice, _) = try await alice.next { $0["method"] == "$/cancel_request" }
                    let (toBob, _) = try await bob.next { $0["method"] == "$/cancel_request" }
                    #expect(toAlice["params"]?["requestId"] == askAlice["id"])
                    #expect(toBob["params"]?["request_id"] == askBob["id"])
                    let (done, updates) = try await alice.collect(until: "prompt")
                    #expect(done["result"]?["stopReason"] == "end_turn")
                    #expect(chunkText(updates, seed: false) == "cancel-ask error: -32800")
                }
            }
        }
    }

    @Test("a phone's $/cancel_request reaches the agent with the id the agent knows, not the phone's")
    func phoneCancelRequest() async throws {
        try await ScriptAgent.bridge { port, _ in
            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: true)
                let session = try await phone.newSession(seed: true)
                phone.prompt(seed: true, session: session, text: "wait", id: "phone-7")
                // The prompt is routed (the phone's id mapped to the agent's) before the cancel: a later request of the
                // same phone has been answered by the agent.
                _ = try await phone.call("_test/log", id: "routed", [:])
                phone.send(JSONValue.object(["jsonrpc": "2.0", "method": "$/cancel_request", "params": ["request_id": "phone-7"]]))
                phone.send(JSONValue.object(["jsonrpc": "2.0", "method": "session/cancel", "params": ["session_id": .string(session)]]))
                let (done, _) = try await phone.collect(until: "phone-7")
                #expect(done["result"]?["stop_reason"] == "cancelled")
                let (log, _) = try await phone.call("_test/log", id: "log", [:])
                // Extension results are free-form: either spelling, depending on item 8.
                let first = log["result"]?["cancel_request"]?.arrayValue?.first
                let requested = try #require(first?["requestId"] ?? first?["request_id"], "\(log)")
                #expect(requested != "phone-7")
                #expect(requested.intValue != nil, "the agent's own (integer) id: \(requested)")
            }
        }
    }

    // MARK: big prompts (item 6), the present (item 5), early updates (item 7)

    @Test("a prompt carrying a 3 MB photo passes with the default frame size, and the other attached phone sees it as user_message_chunk")
    func bigImagePrompt() async throws {
        let photo = String(repeating: "QUJD", count: 750_000)  // 3,000,000 bytes of base64
        try await ScriptAgent.bridge { port, _ in
            try await TestClient.with(port: port) { alice in
                try await TestClient.with(port: port) { bob in
                    try await alice.initialize(seed: false)
                    try await bob.initialize(seed: true)
                    let session = try await alice.newSession(seed: false)
                    _ = try await bob.call("session/load", id: "l", ["session_id": .string(session)])
                    alice.send(JSONValue.object([
                        "jsonrpc": "2.0", "id": "prompt", "method": "session/prompt",
                        "params": ["sessionId": .string(session), "prompt": [
                            ["type": "text", "text": "image"], ["type": "image", "mimeType": "image/jpeg", "data": .string(photo)],
                        ]],
                    ]))
                    let (done, updates) = try await alice.collect(until: "prompt", timeout: .seconds(30))
                    #expect(done["result"]?["stopReason"] == "end_turn", "\(done)")
                    #expect(chunkText(updates, seed: false) == "image bytes: 3000000")
                    let (echo, _) = try await bob.next { $0["params"]?["update"]?["session_update"] == "user_message_chunk" && $0["params"]?["update"]?["content"]?["type"] == "image" }
                    #expect(echo["params"]?["update"]?["content"]?["data"]?.stringValue?.utf8.count == 3_000_000)
                    #expect(echo["params"]?["update"]?["content"]?["mime_type"] == "image/jpeg")
                }
            }
        }
    }

    @Test("each phone's prompt reaches every attached phone as a sequenced user_message_chunk marked as the bridge's record, before the agent's answer")
    func promptEcho() async throws {
        try await ScriptAgent.bridge { port, _ in
            try await TestClient.with(port: port) { alice in
                try await TestClient.with(port: port) { bob in
                    try await alice.initialize(seed: true)
                    try await bob.initialize(seed: false)
                    let session = try await alice.newSession(seed: true)
                    _ = try await bob.call("session/load", id: "l", ["sessionId": .string(session), "cwd": "/", "mcpServers": []])
                    alice.prompt(seed: true, session: session, text: "hello from alice")
                    let (done, aliceFrames) = try await alice.collect(until: "prompt")
                    #expect(done["result"]?["stop_reason"] == "end_turn")
                    // The sender gets the record too (issue 28 item 4): its seq stays unbroken, and promptId is its id.
                    let own = aliceFrames.first { $0["params"]?["update"]?["session_update"] == "user_message_chunk" }
                    #expect(own?["params"]?["_meta"]?["oa"] == ["origin": "bridge", "promptId": "prompt"])
                    let (chunk, before) = try await bob.next { $0["params"]?["update"]?["sessionUpdate"] == "agent_message_chunk" }
                    #expect(chunk["params"]?["update"]?["content"]?["text"] == "heard: hello from alice")
                    let echo = before.first { $0["params"]?["update"]?["sessionUpdate"] == "user_message_chunk" }
                    #expect(echo?["params"]?["update"]?["content"]?["text"] == "hello from alice")
                    #expect(echo?["method"] == "session/update", "sequenced and replayed, no longer _oa/user_message")
                    #expect(echo?["params"]?["_meta"]?["oa"]?["origin"] == "bridge")
                    #expect(echo?["params"]?["_meta"]?["seq"]?.intValue.map { $0 + 1 } == chunk["params"]?["_meta"]?["seq"]?.intValue)
                }
            }
        }
    }

    @Test("a phone that attaches gets the present mode (from current_mode_update and session/set_mode), not the one session/new answered")
    func presentMode() async throws {
        try await ScriptAgent.bridge { port, _ in
            try await TestClient.with(port: port) { alice in
                try await TestClient.with(port: port) { bob in
                    try await alice.initialize(seed: false)
                    try await bob.initialize(seed: true)
                    let session = try await alice.newSession(seed: false)
                    alice.prompt(seed: false, session: session, text: "mode code")
                    _ = try await alice.collect(until: "prompt")
                    let (loaded, _) = try await bob.call("session/load", id: "l", ["session_id": .string(session)])
                    #expect(loaded["result"]?["modes"]?["current_mode_id"] == "code", "\(loaded)")
                    _ = try await bob.call("session/set_mode", id: "m", ["session_id": .string(session), "mode_id": "ask"])
                    let (resumed, _) = try await alice.call("session/resume", id: "r", ["sessionId": .string(session), "cwd": "/", "mcpServers": []])
                    #expect(resumed["result"]?["modes"]?["currentModeId"] == "ask", "\(resumed)")
                }
            }
        }
    }

    @Test("an update the agent sends before it answers session/new is delivered, before the answer")
    func earlyUpdate() async throws {
        try await ScriptAgent.bridge { port, _ in
            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: true)
                let (answer, before) = try await phone.call("session/new", id: "n", ["mcp_servers": []])
                let session = try #require(answer["result"]?["session_id"])
                let early = try #require(before.first { $0["method"] == "session/update" }, "the early update was dropped")
                #expect(early["params"]?["session_id"] == session)
                #expect(early["params"]?["update"]?["available_commands"]?.arrayValue?.first?["name"] == "review")
                #expect(early["params"]?["_meta"]?["seq"] == 1)
            }
        }
    }

    // MARK: free-form data (item 8), initialize (item 9)

    @Test("initialize keeps the agent's _meta and every field it answered, in both dialects")
    func initializeKeepsEverything() async throws {
        try await ScriptAgent.bridge { port, configuration in
            try await TestClient.with(port: port) { phone in
                let official = try await phone.initialize(seed: false)
                #expect(official["_meta"]?["vendor.example/build"] == ["commitHash": "abc", "snake_key": 1])
                #expect(official["_meta"]?["workingDirectory"] != nil)
                #expect(official["agentCapabilities"]?["sessionCapabilities"]?["resume"] == [:])
                #expect(official["protocolVersion"] == 1)
            }
            try await TestClient.with(port: port) { phone in
                let seed = try await phone.initialize(seed: true)
                #expect(seed["_meta"]?["vendor.example/build"] == ["commitHash": "abc", "snake_key": 1], "_meta is never renamed")
                #expect(seed["_meta"]?["working_directory"] != nil)
                #expect(seed["agent_capabilities"]?["prompt_capabilities"]?["image"] == true)
            }
        }
    }

    @Test("an agent that answers initialize with another protocol version is refused with an error naming both versions")
    func agentProtocolVersion() async throws {
        try await ScriptAgent.bridge(configure: { $0.agentEnvironment = ["SCRIPT_AGENT_VERSION": "2"] }, { port, _ in
            try await TestClient.with(port: port) { phone in
                phone.send(#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#)
                let answer = try await phone.next()
                #expect(answer["error"]?["code"] == -32603, "\(answer)")
                #expect(answer["error"]?["data"]?["protocolVersion"] == 2)
            }
        })
    }

    @Test("seed dialect: an elicitation's requestedSchema, the answer's content and error data reach the other side unrenamed")
    func elicitationFreeForm() async throws {
        try await ScriptAgent.bridge { port, _ in
            try await TestClient.with(port: port) { phone in
                try await phone.initializeWithElicitation(seed: true)
                let session = try await phone.newSession(seed: true)
                phone.prompt(seed: true, session: session, text: "elicit")
                let (ask, _) = try await phone.next { $0["method"] == "elicitation/create" }
                let properties = ask["params"]?["requested_schema"]?["properties"]
                #expect(properties?["branchName"] == ["type": "string"], "\(ask)")
                #expect(properties?["dry_run"] == ["type": "boolean"])
                phone.answer(ask, result: ["action": "accept", "content": ["branchName": "main", "dry_run": true]])
                let (_, updates) = try await phone.collect(until: "prompt")
                #expect(chunkText(updates, seed: true) == #"elicit {"action": "accept", "content": {"branchName": "main", "dry_run": true}}"#)

                phone.prompt(seed: true, session: session, text: "elicit", id: "p2")
                let (again, _) = try await phone.next { $0["method"] == "elicitation/create" }
                phone.send(JSONValue.object(["jsonrpc": "2.0", "id": again["id"] ?? .null,
                                             "error": ["code": -32603, "message": "no", "data": ["field_name": "x", "otherField": 1]]]))
                let (_, failed) = try await phone.collect(until: "p2")
                #expect(chunkText(failed, seed: true) == #"elicit error: -32603 {"field_name": "x", "otherField": 1}"#)
            }
        }
    }

    @Test("seed dialect: an extension method's params and result are not renamed")
    func extensionFreeForm() async throws {
        try await ScriptAgent.bridge { port, _ in
            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: true)
                let (log, _) = try await phone.call("_test/log", id: "log", ["someKey": 1, "other_key": ["innerKey": 2]])
                #expect(log["result"]?["echo"] == ["someKey": 1, "other_key": ["innerKey": 2]], "\(log)")
            }
        }
    }

    @Test("seed dialect: two keys that collide after conversion are an error, not a silent merge")
    func collidingKeys() async throws {
        try await ScriptAgent.bridge { port, _ in
            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: true)
                let session = try await phone.newSession(seed: true)
                let (answer, _) = try await phone.call("session/prompt", id: "p", [
                    "session_id": .string(session), "sessionId": "someone-else", "prompt": [["type": "text", "text": "hi"]],
                ])
                #expect(answer["error"]?["code"] == -32602, "\(answer)")
                #expect(answer["error"]?["data"]?["key"] == "sessionId")
            }
        }
    }

    @Test("seed dialect: an agent update whose keys collide in snake_case is withheld with its seq and logged; official phones get it whole")
    func collidingAgentUpdate() async throws {
        let logs = TestLog()
        try await ScriptAgent.bridge(logs: logs) { port, _ in
            try await TestClient.with(port: port) { seed in
                try await TestClient.with(port: port) { official in
                    try await seed.initialize(seed: true)
                    try await official.initialize(seed: false)
                    let session = try await seed.newSession(seed: true)
                    _ = try await official.call("session/load", id: "l", ["sessionId": .string(session), "cwd": "/", "mcpServers": []])
                    seed.prompt(seed: true, session: session, text: "collide")
                    let (done, frames) = try await seed.collect(until: "prompt")
                    #expect(done["result"]?["stop_reason"] == "end_turn", "\(done)")
                    let withheld = try #require(frames.first { $0["method"] == "_oa/notification_withheld" }, "\(frames)")
                    #expect(withheld["params"]?["session_id"] == .string(session))
                    #expect(withheld["params"]?["method"] == "session/update")
                    #expect(withheld["params"]?["error"]?["code"] == -32603)
                    #expect(withheld["params"]?["error"]?["data"]?["key"] == "foo_bar")
                    #expect(withheld["params"]?["error"]?["data"]?["sources"] == ["fooBar", "foo_bar"])
                    let seq = try #require(withheld["params"]?["_meta"]?["seq"]?.intValue)
                    // Nothing merged reaches the seed phone; the next update follows with the next seq.
                    // (The bridge's record of the prompt "collide" is a user_message_chunk: not the agent's update.)
                    #expect(!frames.contains { $0["params"]?["update"]?["content"]?["text"] == "collide" && $0["params"]?["update"]?["session_update"] != "user_message_chunk" }, "\(frames)")
                    let after = try #require(frames.first { $0["params"]?["update"]?["content"]?["text"] == "after collide" })
                    #expect(after["params"]?["_meta"]?["seq"]?.intValue == seq + 1)

                    let (whole, _) = try await official.next {
                        $0["method"] == "session/update" && $0["params"]?["update"]?["content"]?["text"] == "collide"
                            && $0["params"]?["update"]?["sessionUpdate"] != "user_message_chunk"
                    }
                    #expect(whole["params"]?["update"]?["content"]?["fooBar"] == 1)
                    #expect(whole["params"]?["update"]?["content"]?["foo_bar"] == 2)
                    #expect(whole["params"]?["_meta"]?["seq"]?.intValue == seq)
                    #expect(await logs.waitFor("an agent notification has keys that collide in the client's dialect; sent _oa/notification_withheld instead"))
                }
            }
        }
    }

    @Test("seed dialect: an agent request whose keys collide in snake_case is an error for the agent (-32602), not sent merged")
    func collidingAgentRequest() async throws {
        try await ScriptAgent.bridge { port, _ in
            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: true)
                let session = try await phone.newSession(seed: true)
                phone.prompt(seed: true, session: session, text: "permission-collide")
                let (_, frames) = try await phone.collect(until: "prompt")
                #expect(!frames.contains { $0["method"] == "session/request_permission" }, "\(frames)")
                #expect(chunkText(frames, seed: true) == #"permission-collide error: -32602 {"key": "tool_call_id"}"#)
            }
        }
    }

    // MARK: files (item 10)

    @Test("fs/write_text_file is answered with an object ({}), as the schema's WriteTextFileResponse")
    func writeAnswersObject() async throws {
        try await ScriptAgent.bridge { port, configuration in
            let root = URL(fileURLWithPath: configuration.workingDirectory).resolvingSymlinksInPath().path
            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: false)
                let session = try await phone.newSession(seed: false)
                phone.prompt(seed: false, session: session, text: "write \(root)/out.txt hello")
                let (_, updates) = try await phone.collect(until: "prompt")
                #expect(chunkText(updates, seed: false) == "write {}")
                #expect(try String(contentsOfFile: root + "/out.txt", encoding: .utf8) == "hello")
            }
        }
    }

    @Test("a session's additionalDirectories are served besides its cwd; one outside the working directory is refused")
    func additionalDirectories() async throws {
        try await ScriptAgent.bridge { port, configuration in
            let root = URL(fileURLWithPath: configuration.workingDirectory).resolvingSymlinksInPath().path
            try FileManager.default.createDirectory(atPath: root + "/app", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: root + "/logs", withIntermediateDirectories: true)
            try "a log line".write(toFile: root + "/logs/run.log", atomically: true, encoding: .utf8)
            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: true)
                let (refused, _) = try await phone.call("session/new", id: "bad", [
                    "cwd": .string(root + "/app"), "additional_directories": ["/etc"], "mcp_servers": [],
                ])
                #expect(refused["error"]?["code"] == -32602, "\(refused)")
                let (created, _) = try await phone.call("session/new", id: "n", [
                    "cwd": .string(root + "/app"), "additional_directories": [.string(root + "/logs")], "mcp_servers": [],
                ])
                let session = try #require(created["result"]?["session_id"]?.stringValue, "\(created)")
                phone.prompt(seed: true, session: session, text: "read \(root)/logs/run.log")
                let (_, updates) = try await phone.collect(until: "prompt")
                #expect(chunkText(updates, seed: true) == #"read {"content": "a log line"}"#)
            }
        }
    }

    @Test("--fs-scope: a read outside the session's directories is refused by default and served under any", arguments: [WorkspaceScope.workspace, .any])
    func fileScope(scope: WorkspaceScope) async throws {
        let outside = URL(fileURLWithPath: try TestBridge.makeDirectory()).resolvingSymlinksInPath().path
        try "outside line".write(toFile: outside + "/notes.txt", atomically: true, encoding: .utf8)
        try await ScriptAgent.bridge(configure: { $0.fileScope = scope }, { port, _ in
            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: false)
                let session = try await phone.newSession(seed: false)
                phone.prompt(seed: false, session: session, text: "read \(outside)/notes.txt")
                let (_, updates) = try await phone.collect(until: "prompt")
                if scope == .workspace {
                    #expect(chunkText(updates, seed: false).hasPrefix("read error: -32602"), "\(updates)")
                } else {
                    #expect(chunkText(updates, seed: false) == #"read {"content": "outside line"}"#)
                }
            }
        })
    }

    // MARK: capabilities (item 2)

    @Test("the agent is told what the bridge serves: files and terminals; no elicitation when no phone advertises it")
    func capabilitiesToAgent() async throws {
        try await ScriptAgent.bridge { port, _ in
            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: false)
                let (log, _) = try await phone.call("_test/log", id: "log", [:])
                let capabilities = log["result"]?["clientCapabilities"]
                #expect(capabilities?["fs"]?["readTextFile"] == true, "\(log)")
                #expect(capabilities?["terminal"] == true)
                #expect(capabilities?["elicitation"] == nil, "the phone advertised none (see ACPTerminalConformanceTests)")
            }
        }
    }

    @Test("elicitation/create goes only to the attached phones that advertise elicitation, and the answer goes back")
    func elicitationToAdvertisers() async throws {
        try await ScriptAgent.bridge { port, _ in
            try await TestClient.with(port: port) { alice in
                try await TestClient.with(port: port) { bob in
                    try await alice.initializeWithElicitation(seed: false)
                    try await bob.initialize(seed: true)
                    let session = try await bob.newSession(seed: true)
                    _ = try await alice.call("session/load", id: "l", ["sessionId": .string(session), "cwd": "/", "mcpServers": []])
                    bob.prompt(seed: true, session: session, text: "elicit")
                    let (ask, _) = try await alice.next { $0["method"] == "elicitation/create" }
                    alice.answer(ask, result: ["action": "accept", "content": ["branchName": "dev"]])
                    let (done, updates) = try await bob.collect(until: "prompt")
                    #expect(done["result"]?["stop_reason"] == "end_turn")
                    #expect(!updates.contains { $0["method"] == "elicitation/create" }, "bob did not advertise elicitation")
                    #expect(chunkText(updates, seed: true) == #"elicit {"action": "accept", "content": {"branchName": "dev"}}"#)
                }
            }
        }
    }

    @Test("an elicitation no attached phone can answer is an error for the agent at once")
    func elicitationNobodyCan() async throws {
        try await ScriptAgent.bridge { port, _ in
            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: false)
                let session = try await phone.newSession(seed: false)
                phone.prompt(seed: false, session: session, text: "elicit")
                let (done, updates) = try await phone.collect(until: "prompt", timeout: .seconds(5))
                #expect(done["result"]?["stopReason"] == "end_turn")
                #expect(!updates.contains { $0["method"] == "elicitation/create" })
                #expect(chunkText(updates, seed: false).hasPrefix("elicit error: -32603"))
            }
        }
    }
}
