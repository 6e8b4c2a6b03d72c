import BridgeRPC
import BridgeServer
import Foundation
import Testing

/// An agent written with the official ACP Python SDK for the hub's ordering and namespace tests (issues 25, 27, 28).
/// It records, at the wire (the SDK's stream observer, in the order lines arrive), the `session/cancel`
/// notifications and the answers to its own requests it receives; `_test/order` returns that record.
///
/// Prompts by first word: `permission` asks `session/request_permission` and ends the turn `cancelled` when the
/// answer is; `forge` sends what only the bridge may send (`_oa/agent_exited`, `_oa/user_message`,
/// `_oa/request_answered`, a `user_message_chunk` claiming `_meta.oa.origin = "bridge"`) and the request
/// `_oa/session/resume`, then reports the request's error code; anything else: `heard: <text>`. Its `session/new`
/// and `session/load` answers carry `_meta` of its own (`agent.example/new`, `agent.example/load`).
enum HubAgent {
    static let script = #"""
import asyncio, json, uuid
from acp import PROTOCOL_VERSION, RequestError, run_agent, update_agent_message_text
from acp.connection import StreamDirection
from acp.schema import (AgentCapabilities, Implementation, InitializeResponse, LoadSessionResponse,
                        NewSessionResponse, PermissionOption, PromptResponse, ToolCallUpdate)

ORDER = []

class HubAgent:
    def on_connect(self, conn):
        self.conn = conn
        conn._conn.add_observer(self.observe)

    def observe(self, event):
        if event.direction != StreamDirection.INCOMING:
            return
        message = event.message
        if message.get("method") == "session/cancel":
            ORDER.append("cancel")
        elif "method" not in message and "id" in message:
            result = message.get("result") or {}
            outcome = (result.get("outcome") or {}).get("outcome") if isinstance(result, dict) else None
            ORDER.append("answer:%s" % (outcome or ("error" if "error" in message else "result")))

    async def initialize(self, protocol_version, client_capabilities=None, client_info=None, **kwargs):
        return InitializeResponse(protocol_version=PROTOCOL_VERSION, agent_capabilities=AgentCapabilities(load_session=True),
                                  agent_info=Implementation(name="hub-agent", title="Hub test agent", version="1.0"))

    async def new_session(self, cwd, mcp_servers=None, **kwargs):
        response = NewSessionResponse(session_id="h-" + uuid.uuid4().hex[:8])
        response.field_meta = {"agent.example/new": "kept"}
        return response

    async def load_session(self, cwd, session_id, mcp_servers=None, **kwargs):
        await self.conn.session_update(session_id, update_agent_message_text("loaded history"))
        response = LoadSessionResponse()
        response.field_meta = {"agent.example/load": "kept", "lastSeq": "the agent's"}
        return response

    async def prompt(self, session_id, prompt, **kwargs):
        text = " ".join(getattr(block, "text", "") or "" for block in prompt)
        word = text.split(" ")[0] if text else ""
        say = lambda line: self.conn.session_update(session_id, update_agent_message_text(line))
        if word == "permission":
            ORDER.clear()
            answer = await self.conn.request_permission(
                session_id=session_id, tool_call=ToolCallUpdate(tool_call_id="call-1", title="Run it"),
                options=[PermissionOption(option_id="yes", name="Yes", kind="allow_once")])
            if answer.outcome.outcome == "cancelled":
                return PromptResponse(stop_reason="cancelled")
            await say("permission: " + answer.outcome.option_id)
            return PromptResponse(stop_reason="end_turn")
        if word == "forge":
            raw = self.conn._conn
            await raw.send_notification("_oa/agent_exited", {"reason": "forged", "restartsOn": "session/new"})
            await raw.send_notification("_oa/user_message", {"sessionId": session_id, "update": {
                "sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "forged words"}}})
            await raw.send_notification("_OA/request_answered", {"requestId": 1, "sessionId": session_id})
            await raw.send_notification("session/update", {"sessionId": session_id, "_meta": {
                "oa": {"origin": "bridge", "promptId": "forged"}, "agent.example/own": 1}, "update": {
                "sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "replayed by the agent"}}})
            try:
                await asyncio.wait_for(raw.send_request("_oa/session/resume", {"sessionId": session_id, "lastSeq": 0}), 5)
                await say("forge answered")
            except RequestError as error:
                await say("forge error: %s" % error.code)
            except asyncio.TimeoutError:
                await say("forge timeout")
            return PromptResponse(stop_reason="end_turn")
        await say("heard: " + text)
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id, **kwargs):
        pass

    async def ext_method(self, method, params):
        if method == "test/order":
            return {"order": list(ORDER)}
        raise RequestError.method_not_found("_" + method)

    async def ext_notification(self, method, params):
        pass

asyncio.run(run_agent(HubAgent()))
"""#

    /// A bridge running the agent.
    static func bridge<T: Sendable>(
        _ body: @Sendable (_ port: Int, _ configuration: BridgeServerConfiguration) async throws -> T
    ) async throws -> T {
        let python = try #require(ACPPython.path)
        let directory = try TestBridge.makeDirectory()
        let path = directory + "/hub_agent.py"
        try HubAgent.script.write(toFile: path, atomically: true, encoding: .utf8)
        return try await TestBridge.with(configure: { $0.agentCommand = [python, path] }, body)
    }
}

@Suite("The hub: cancel order, the bridge's namespace, prompts in the replay (SDK agent)", .serialized, .timeLimit(.minutes(2)),
       .enabled(if: ACPPython.path != nil, "needs a Python with agent-client-protocol (set OA_BRIDGE_ACP_PYTHON or create .venv)"),
       .tags(.loopback, .externalTool))
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
