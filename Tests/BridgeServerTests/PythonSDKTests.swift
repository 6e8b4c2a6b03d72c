import BridgeRPC
import BridgeServer
import BridgeTestKit
import Foundation
import Testing

/// A Python with the official ACP SDK (`agent-client-protocol`) and `websockets`: `$OA_BRIDGE_ACP_PYTHON`, or the
/// project's `.venv/bin/python`.
///
/// The tests below run only where one is found.
enum ACPPython {
    static let path: String? = {
        var candidates: [String] = []
        if let configured = ProcessInfo.processInfo.environment["OA_BRIDGE_ACP_PYTHON"] { candidates.append(configured) }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        candidates.append(root.appendingPathComponent(".venv/bin/python").path)
        for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate) {
            if (try? run([candidate, "-c", "import acp, acp.ws, websockets"]).status) == 0 { return candidate }
        }
        return nil
    }()

    /// Runs a command to completion (bounded by `timeout(1)`), returning its status and stdout.
    static func run(_ command: [String], seconds: Int = 30) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        process.arguments = ["\(seconds)"] + command
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// An ACP agent written with the SDK, unchanged: streams, reads a file through the client, asks permission.
    static let agentScript = #"""
# An ACP agent written with the official Python SDK, unchanged, for running behind the bridge.
import asyncio, os, uuid
from acp import PROTOCOL_VERSION, run_agent, start_tool_call, update_agent_message_text
from acp.schema import (AgentCapabilities, Implementation, InitializeResponse, NewSessionResponse,
                        PermissionOption, PromptResponse, ToolCallUpdate)

class SDKAgent:
    def on_connect(self, conn):
        self.conn = conn
        self.cwd = {}

    async def initialize(self, protocol_version, client_capabilities=None, client_info=None, **kwargs):
        return InitializeResponse(protocol_version=PROTOCOL_VERSION, agent_capabilities=AgentCapabilities(),
                                  agent_info=Implementation(name="python-sdk-agent", title="Python SDK agent", version="1.0"))

    async def new_session(self, cwd, mcp_servers=None, **kwargs):
        session_id = "py-" + uuid.uuid4().hex[:8]
        self.cwd[session_id] = cwd
        return NewSessionResponse(session_id=session_id)

    async def prompt(self, session_id, prompt, **kwargs):
        text = " ".join(getattr(block, "text", "") for block in prompt)
        await self.conn.session_update(session_id, update_agent_message_text("heard: " + text))
        read = await self.conn.read_text_file(session_id=session_id, path=os.path.join(self.cwd[session_id], "hello.txt"))
        await self.conn.session_update(session_id, update_agent_message_text(" | file: " + read.content))
        await self.conn.session_update(session_id, start_tool_call("call-1", "Say hello", kind="other", status="pending"))
        answer = await self.conn.request_permission(
            session_id=session_id,
            tool_call=ToolCallUpdate(tool_call_id="call-1", title="Say hello"),
            options=[PermissionOption(option_id="yes", name="Yes", kind="allow_once"),
                     PermissionOption(option_id="no", name="No", kind="reject_once")])
        chosen = getattr(answer.outcome, "option_id", None) or answer.outcome.outcome
        await self.conn.session_update(session_id, update_agent_message_text(" | permission: " + chosen))
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id, **kwargs):
        pass

asyncio.run(run_agent(SDKAgent()))
"""#

    /// An official ACP client written with the SDK, connected over WebSocket (`python client.py URL CWD`).
    static let clientScript = #"""
# An official-ACP client written with the Python SDK, connected to the bridge over WebSocket. Prints one JSON line.
import asyncio, json, sys
from acp import PROTOCOL_VERSION, connect_to_agent, text_block
from acp.schema import AllowedOutcome, ClientCapabilities, Implementation, RequestPermissionResponse
from acp.ws import create_websocket_stream

class SDKClient:
    def __init__(self):
        self.chunks = []
        self.asked = 0

    def on_connect(self, conn):
        pass

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        self.asked += 1
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=options[0].option_id))

    async def session_update(self, session_id, update, **kwargs):
        if getattr(update, "session_update", None) == "agent_message_chunk":
            self.chunks.append(update.content.text)

async def main(url, cwd):
    client = SDKClient()
    transport = await create_websocket_stream(url)
    conn = connect_to_agent(client, transport)
    init = await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities(),
                                 client_info=Implementation(name="sdk-client", title="Python SDK client", version="1.0"))
    session = await conn.new_session(cwd=cwd, mcp_servers=[])
    result = await conn.prompt(session_id=session.session_id, prompt=[text_block("hi from the sdk client")])
    print(json.dumps({"agent": init.agent_info.name if init.agent_info else None, "protocolVersion": init.protocol_version,
                      "stopReason": result.stop_reason, "text": "".join(client.chunks), "asked": client.asked}), flush=True)
    await transport.close()

asyncio.run(asyncio.wait_for(main(sys.argv[1], sys.argv[2]), 20))
"""#
}

@Suite("The official ACP Python SDK on both sides of the bridge", .timeLimit(.minutes(1)), .enabled(if: ACPPython.path != nil, "needs a Python with agent-client-protocol (set OA_BRIDGE_ACP_PYTHON or create .venv)"), .tags(.loopback, .externalTool))
struct PythonSDKTests {
    @Test("an SDK agent behind the bridge serves a seed client and an SDK WebSocket client at the same time")
    func sdkBothSides() async throws {
        let python = try #require(ACPPython.path)
        let scripts = try TestBridge.makeDirectory()
        try ACPPython.agentScript.write(toFile: scripts + "/agent.py", atomically: true, encoding: .utf8)
        try ACPPython.clientScript.write(toFile: scripts + "/client.py", atomically: true, encoding: .utf8)
        try await TestBridge.with(configure: { $0.agentCommand = [python, scripts + "/agent.py"] }, { port, configuration in
            let root = URL(fileURLWithPath: configuration.workingDirectory).resolvingSymlinksInPath().path
            try "desk file".write(toFile: root + "/hello.txt", atomically: true, encoding: .utf8)
            try await TestClient.with(port: port) { phone in
                let info = try await phone.initialize(seed: true)
                #expect(info["agent_info"]?["name"] == "python-sdk-agent")
                #expect(info["protocol_version"] == "0.2.2")
                let session = try await phone.newSession(seed: true)
                phone.prompt(seed: true, session: session, text: "from the phone")
                let (ask, before) = try await phone.next { $0["method"] == "session/request_permission" }
                #expect(ask["params"]?["tool_call"]?["tool_call_id"] == "call-1")
                #expect(before.contains { $0["params"]?["update"]?["session_update"] == "tool_call" })

                // While the phone's turn waits on its permission, the SDK client runs a whole turn of its own.
                let (status, output) = try await onOwnThread { try ACPPython.run([python, scripts + "/client.py", "ws://127.0.0.1:\(port)/", root]) }
                #expect(status == 0)
                let summary = try JSONValue(parsing: output.trimmingCharacters(in: .whitespacesAndNewlines))
                #expect(summary["agent"] == "python-sdk-agent")
                #expect(summary["protocolVersion"] == .int(1))
                #expect(summary["stopReason"] == "end_turn")
                #expect(summary["text"] == "heard: hi from the sdk client | file: desk file | permission: yes")
                #expect(summary["asked"] == .int(1))

                phone.send(JSONValue.object(["jsonrpc": "2.0", "id": ask["id"] ?? .null, "result": ["outcome": ["outcome": "selected", "option_id": "no"]]]))
                let (done, after) = try await phone.collect(until: "prompt")
                #expect(done["result"] == ["stop_reason": "end_turn"])
                #expect(chunkText(before + after, seed: true) == "heard: from the phone | file: desk file | permission: no")
            }
        })
    }
}
