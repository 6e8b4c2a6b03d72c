import BridgeRPC
import BridgeServer
import BridgeTestKit
import Foundation
import Testing

/// Issue 28 item 1 (the WebSocket part): the official ACP Python SDK's own WebSocket client (`acp.ws`) at
/// `ws://host:port/acp`, the RFD's endpoint, runs a whole turn through the bridge (initialize, session/new, a prompt
/// with a permission the client answers).
@Suite("The official SDK's acp.ws client at /acp", .timeLimit(.minutes(1)),
       .enabled(if: ACPPython.path != nil, "needs a Python with agent-client-protocol (set OA_BRIDGE_ACP_PYTHON or create .venv)"),
       .tags(.loopback, .externalTool))
struct ACPPathSDKTests {
    @Test("acp.ws at ws://127.0.0.1:PORT/acp: initialize, session/new, a prompt with a permission")
    func sdkClientAtACPPath() async throws {
        let python = try #require(ACPPython.path)
        let scripts = try TestBridge.makeDirectory()
        try ACPPython.agentScript.write(toFile: scripts + "/agent.py", atomically: true, encoding: .utf8)
        try ACPPython.clientScript.write(toFile: scripts + "/client.py", atomically: true, encoding: .utf8)
        try await TestBridge.with(configure: { $0.agentCommand = [python, scripts + "/agent.py"] }, { port, configuration in
            let root = URL(fileURLWithPath: configuration.workingDirectory).resolvingSymlinksInPath().path
            try "desk file".write(toFile: root + "/hello.txt", atomically: true, encoding: .utf8)
            let (status, output) = try await onOwnThread { try ACPPython.run([python, scripts + "/client.py", "ws://127.0.0.1:\(port)/acp", root]) }
            #expect(status == 0, "\(output)")
            let summary = try JSONValue(parsing: output.trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(summary["stopReason"] == "end_turn")
            #expect(summary["text"] == "heard: hi from the sdk client | file: desk file | permission: yes")
            #expect(summary["asked"] == .int(1))
        })
    }
}
