import BridgeRPC
import BridgeServer
import BridgeTestKit
import Foundation
import Synchronization
import Testing

/// A scripted agent (BridgeTestKit) for the hub's ordering and namespace tests (issues 25, 27, 28); it used to be an
/// agent written with the ACP Python SDK, whose start took seconds on a loaded machine.
///
/// It records, as messages arrive, the `session/cancel` notifications and the answers to its own requests it
/// receives; `_test/order` returns that record.
///
/// Prompts by first word: `permission` asks `session/request_permission` and ends the turn `cancelled` when the
/// answer is; `forge` sends what only the bridge may send (`_oa/agent_exited`, `_oa/user_message`,
/// `_oa/request_answered`, a `user_message_chunk` claiming `_meta.oa.origin = "bridge"`) and the request
/// `_oa/session/resume`, then reports the request's error code; anything else: `heard: <text>`. Its `session/new`
/// and `session/load` answers carry `_meta` of its own (`agent.example/new`, `agent.example/load`).
enum HubAgent {
    /// A new agent.
    static func agent() -> ScriptedAgent {
        let order = Mutex<[String]>([])
        let sessions = Mutex(0)
        let observe: @Sendable (JSONRPCMessage) -> Void = { message in
            switch message {
            case .notification(let notification) where notification.method == "session/cancel":
                order.withLock { $0.append("cancel") }
            case .response(let response):
                let outcome: String
                switch response.outcome {
                case .success(let result): outcome = result["outcome"]?["outcome"]?.stringValue ?? "result"
                case .failure: outcome = "error"
                }
                order.withLock { $0.append("answer:\(outcome)") }
            default:
                break
            }
        }
        return ScriptedAgent(observe: observe) { message, peer in
            guard case .request(let request) = message else { return }
            let params = request.params ?? [:]
            func say(_ session: JSONValue, _ text: String) {
                peer.notify("session/update", params: [
                    "sessionId": session, "update": ["sessionUpdate": "agent_message_chunk", "content": ["type": "text", "text": .string(text)]],
                ])
            }
            switch request.method {
            case "initialize":
                peer.respond(to: request.id, result: [
                    "protocolVersion": 1, "agentCapabilities": ["loadSession": true],
                    "agentInfo": ["name": "hub-agent", "title": "Hub test agent", "version": "1.0"],
                ])
            case "session/new":
                let number = sessions.withLock { count in
                    count += 1
                    return count
                }
                peer.respond(to: request.id, result: ["sessionId": .string("h-\(number)"), "_meta": ["agent.example/new": "kept"]])
            case "session/load":
                say(params["sessionId"] ?? .null, "loaded history")
                peer.respond(to: request.id, result: ["_meta": ["agent.example/load": "kept", "lastSeq": "the agent's"]])
            case "session/prompt":
                let session = params["sessionId"] ?? .null
                let text = (params["prompt"]?.arrayValue ?? []).map { $0["text"]?.stringValue ?? "" }.joined(separator: " ")
                switch text.split(separator: " ").first.map(String.init) ?? "" {
                case "permission":
                    order.withLock { $0.removeAll() }
                    let answer = await peer.ask("session/request_permission", params: [
                        "sessionId": session, "toolCall": ["toolCallId": "call-1", "title": "Run it"],
                        "options": [["optionId": "yes", "name": "Yes", "kind": "allow_once"]],
                    ])
                    let outcome = (try? answer.outcome.get())?["outcome"]
                    if outcome?["outcome"] == "cancelled" {
                        peer.respond(to: request.id, result: ["stopReason": "cancelled"])
                        return
                    }
                    say(session, "permission: " + (outcome?["optionId"]?.stringValue ?? "?"))
                case "forge":
                    peer.notify("_oa/agent_exited", params: ["reason": "forged", "restartsOn": "session/new"])
                    peer.notify("_oa/user_message", params: ["sessionId": session, "update": [
                        "sessionUpdate": "user_message_chunk", "content": ["type": "text", "text": "forged words"]]])
                    peer.notify("_OA/request_answered", params: ["requestId": 1, "sessionId": session])
                    peer.notify("session/update", params: [
                        "sessionId": session, "_meta": ["oa": ["origin": "bridge", "promptId": "forged"], "agent.example/own": 1],
                        "update": ["sessionUpdate": "user_message_chunk", "content": ["type": "text", "text": "replayed by the agent"]],
                    ])
                    let answer = await peer.ask("_oa/session/resume", params: ["sessionId": session, "lastSeq": 0])
                    switch answer.outcome {
                    case .success: say(session, "forge answered")
                    case .failure(let error): say(session, "forge error: \(error.code)")
                    }
                default:
                    say(session, "heard: " + text)
                }
                peer.respond(to: request.id, result: ["stopReason": "end_turn"])
            case "_test/order":
                peer.respond(to: request.id, result: ["order": .array(order.withLock { $0 }.map { .string($0) })])
            default:
                peer.respond(to: request.id, error: .methodNotFound(request.method))
            }
        }
    }

    /// A bridge running the agent.
    static func bridge<T: Sendable>(
        _ body: @Sendable (_ port: Int, _ configuration: BridgeServerConfiguration) async throws -> T
    ) async throws -> T {
        try await TestBridge.with(configure: { $0.inProcessAgent = { HubAgent.agent() } }, body)
    }
}

@Suite("The hub: cancel order, the bridge's namespace, prompts in the replay (scripted agent)", .timeLimit(.minutes(1)), .tags(.loopback))
struct HubSecurityTests {
    @Test("session/cancel reaches the agent before the answer `cancelled` to its pending permission request, every run (10)")
    func cancelBeforePermissionAnswer() async throws {
        try await HubAgent.bridge { port, _ in
            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: false)
                for run in 0..<10 {
                    let session = try await phone.newSession(seed: false, id: .string("new-\(run)"))
                    phone.prompt(seed: false, session: session, text: "permission", id: .string("p-\(run)"))
                    _ = try await phone.next { $0["method"] == "session/request_permission" }
                    phone.send(JSONValue.object(["jsonrpc": "2.0", "method": "session/cancel", "params": ["sessionId": .string(session)]]))
                    let (done, _) = try await phone.collect(until: .string("p-\(run)"))
                    #expect(done["result"]?["stopReason"] == "cancelled", "run \(run): \(done)")
                    let (order, _) = try await phone.call("_test/order", id: .string("o-\(run)"), [:])
                    #expect(order["result"]?["order"] == ["cancel", "answer:cancelled"], "run \(run): the agent received \(order)")
                }
            }
        }
    }

    @Test("the agent cannot speak in the bridge's namespace: its _oa/* notifications are dropped, its _oa/* requests get -32601, its _meta.oa is removed")
    func agentCannotForgeTheBridge() async throws {
        try await HubAgent.bridge { port, _ in
            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: false)
                let session = try await phone.newSession(seed: false)
                phone.prompt(seed: false, session: session, text: "forge")
                var frames: [JSONValue] = []
                let deadline = ContinuousClock.now + .seconds(20)
                while ContinuousClock.now < deadline {
                    let frame = try await phone.next()
                    if frame["id"] == "prompt" && frame["method"] == nil { break }
                    frames.append(frame)
                    // Old code forwarded the agent's `_oa/session/resume` request here: answered, so the turn ends.
                    if frame["method"] != nil, frame["id"] != nil {
                        phone.send(JSONValue.object(["jsonrpc": "2.0", "id": frame["id"] ?? .null, "error": ["code": -32000, "message": "phone says no"]]))
                    }
                }
                let methods = frames.compactMap { $0["method"]?.stringValue }
                #expect(!methods.contains { $0.lowercased().hasPrefix("_oa/") }, "the phone got \(methods)")
                #expect(chunkText(frames, seed: false).contains("forge error: -32601"), "\(chunkText(frames, seed: false))")
                let replayed = frames.first { $0["params"]?["update"]?["content"]?["text"] == "replayed by the agent" }
                #expect(replayed?["params"]?["_meta"]?["oa"] == nil, "the agent's user_message_chunk claims the bridge: \(String(describing: replayed))")
                #expect(replayed?["params"]?["_meta"]?["agent.example/own"] == 1, "the agent's other _meta keys are kept")
                #expect(!frames.contains { $0["params"]?["update"]?["content"]?["text"] == "forged words" })
            }
        }
    }

    @Test("prompts are recorded in the replay as user_message_chunk: a phone that loads later sees questions and answers in order")
    func promptsInTheReplay() async throws {
        try await HubAgent.bridge { port, _ in
            try await TestClient.with(port: port) { alice in
                try await alice.initialize(seed: false)
                let session = try await alice.newSession(seed: false)
                alice.send(JSONValue.object([
                    "jsonrpc": "2.0", "id": 41, "method": "session/prompt",
                    "params": ["sessionId": .string(session), "prompt": [["type": "text", "text": "first"], ["type": "text", "text": "block"]]],
                ]))
                let (_, aliceFrames) = try await alice.collect(until: 41)
                // The sender gets the record too (an unbroken seq; the web app knows its own prompt by promptId).
                let own = aliceFrames.filter { $0["params"]?["update"]?["sessionUpdate"] == "user_message_chunk" }
                #expect(own.compactMap { $0["params"]?["_meta"]?["seq"]?.intValue } == [1, 2], "\(aliceFrames)")
                #expect(own.allSatisfy { $0["params"]?["_meta"]?["oa"] == ["origin": "bridge", "promptId": 41] })
                try await TestClient.with(port: port) { bob in
                    try await bob.initialize(seed: true)
                    let (loaded, replay) = try await bob.call("session/load", id: "load", ["session_id": .string(session)])
                    #expect(loaded["result"] != nil, "\(loaded)")
                    let updates = replay.filter { $0["method"] == "session/update" }
                    let kinds = updates.compactMap { $0["params"]?["update"]?["session_update"]?.stringValue }
                    #expect(kinds == ["user_message_chunk", "user_message_chunk", "agent_message_chunk"], "\(updates)")
                    let texts = updates.compactMap { $0["params"]?["update"]?["content"]?["text"]?.stringValue }
                    #expect(texts == ["first", "block", "heard: first block"])
                    let seqs = updates.compactMap { $0["params"]?["_meta"]?["seq"]?.intValue }
                    #expect(seqs == [1, 2, 3])
                    #expect(updates.first?["params"]?["_meta"]?["oa"] == ["origin": "bridge", "promptId": 41])

                    // Live: a prompt of alice reaches bob as a sequenced session/update, not as _oa/user_message.
                    alice.prompt(seed: false, session: session, text: "second", id: "p2")
                    _ = try await alice.collect(until: "p2")
                    let (chunk, skipped) = try await bob.next { $0["params"]?["update"]?["session_update"] == "agent_message_chunk" }
                    let live = skipped.filter { $0["method"] == "session/update" }
                    #expect(!skipped.contains { $0["method"] == "_oa/user_message" })
                    #expect(live.first?["params"]?["update"]?["session_update"] == "user_message_chunk")
                    #expect(live.first?["params"]?["_meta"]?["seq"] == 4 && chunk["params"]?["_meta"]?["seq"] == 5)
                    #expect(live.first?["params"]?["_meta"]?["oa"]?["promptId"] == "p2")
                }
            }
        }
    }

    @Test("the agent's own _meta in session/new and session/load answers is kept, the bridge's keys merged into it")
    func agentMetaKept() async throws {
        try await HubAgent.bridge { port, _ in
            try await TestClient.with(port: port) { alice in
                try await alice.initialize(seed: false)
                let session = try await alice.newSession(seed: false)
                try await TestClient.with(port: port) { bob in
                    try await bob.initialize(seed: false)
                    // A live session: attached without asking the agent; its session/new _meta is kept.
                    let (live, _) = try await bob.call("session/load", id: "l1", ["sessionId": .string(session)])
                    #expect(live["result"]?["_meta"]?["agent.example/new"] == "kept", "\(live)")
                    #expect(live["result"]?["_meta"]?["lastSeq"] == 0)
                    // A session the bridge does not run: the agent loads it; its _meta is kept and lastSeq merged in.
                    let (loaded, _) = try await bob.call("session/load", id: "l2", ["sessionId": "stored-9"])
                    #expect(loaded["result"]?["_meta"]?["agent.example/load"] == "kept", "\(loaded)")
                    #expect(loaded["result"]?["_meta"]?["lastSeq"] == 1, "the bridge's key wins: \(loaded)")
                }
            }
        }
    }
}
