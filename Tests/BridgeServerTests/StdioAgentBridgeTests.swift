import BridgeRPC
import BridgeServer
import Foundation
import Testing

@Suite("The EchoAgent example behind the bridge", .timeLimit(.minutes(1)), .tags(.loopback, .externalTool))
struct StdioAgentBridgeTests {
    @Test("prompt, fs confined to the session directory, and a crash with restart on the next session/new")
    func echoAgent() async throws {
        let agent = try echoAgentPath()
        try await TestBridge.with(configure: { $0.agentCommand = [agent] }, { port, configuration in
            let root = configuration.workingDirectory
            try "hello from the desk".write(toFile: root + "/notes.txt", atomically: true, encoding: .utf8)
            try FileManager.default.createSymbolicLink(atPath: root + "/escape", withDestinationPath: "/etc/hostname")
            try await TestClient.with(port: port) { client in
                let info = try await client.initialize(seed: true)
                #expect(info["agent_info"]?["name"] == "echo-agent")
                #expect(info["agent_capabilities"]?["load_session"] == false)
                let session = try await client.newSession(seed: true)

                client.prompt(seed: true, session: session, text: "hello echo")
                var (done, updates) = try await client.collect(until: "prompt")
                #expect(done["result"]?["stop_reason"] == "end_turn")
                #expect(chunkText(updates, seed: true) == "hello echo ")

                client.prompt(seed: true, session: session, text: "read notes.txt", id: "r1")
                (done, updates) = try await client.collect(until: "r1")
                #expect(chunkText(updates, seed: true) == "content: hello from the desk")

                client.prompt(seed: true, session: session, text: "read ../../../etc/passwd", id: "r2")
                (done, updates) = try await client.collect(until: "r2")
                #expect(chunkText(updates, seed: true).hasPrefix("error:"))
                // Refused before it is resolved ("paths with .. are not allowed") or after ("outside").
                #expect(chunkText(updates, seed: true).contains("outside") || chunkText(updates, seed: true).contains("not allowed"))

                client.prompt(seed: true, session: session, text: "read escape", id: "r3")
                (done, updates) = try await client.collect(until: "r3")
                #expect(chunkText(updates, seed: true).contains("outside"))

                client.prompt(seed: true, session: session, text: "write deep/new.txt written by the agent", id: "w1")
                (done, updates) = try await client.collect(until: "w1")
                #expect(chunkText(updates, seed: true) == "written")
                #expect(try String(contentsOfFile: root + "/deep/new.txt", encoding: .utf8) == "written by the agent")

                client.prompt(seed: true, session: session, text: "ask", id: "a1")
                let (ask, _) = try await client.next { $0["method"] == "session/request_permission" }
                client.send(JSONValue.object(["jsonrpc": "2.0", "id": ask["id"] ?? .null, "result": ["outcome": ["outcome": "selected", "option_id": "yes"]]]))
                (done, updates) = try await client.collect(until: "a1")
                #expect(chunkText(updates, seed: true) == "outcome: yes")

                // The agent dies mid-turn: the prompt fails saying so, and the client is told.
                client.prompt(seed: true, session: session, text: "crash", id: "boom")
                let (failed, _) = try await client.collect(until: "boom")
                #expect(failed["error"]?["message"]?.stringValue?.contains("exited with status 42") == true)
                let (notice, _) = try await client.next { $0["method"] == "_oa/agent_exited" }
                #expect(notice["params"]?["reason"]?.stringValue?.contains("42") == true)

                // The old session is gone; session/new restarts the agent.
                client.prompt(seed: true, session: session, text: "hello", id: "stale")
                #expect(try await client.collect(until: "stale").0["error"] != nil)
                let fresh = try await client.newSession(seed: true, id: "new2")
                client.prompt(seed: true, session: fresh, text: "back again", id: "p2")
                (done, updates) = try await client.collect(until: "p2")
                #expect(done["result"]?["stop_reason"] == "end_turn")
                #expect(chunkText(updates, seed: true) == "back again ")
            }
        })
    }

    @Test("an agent command that does not exist fails initialize with a message saying so")
    func missingAgent() async throws {
        try await TestBridge.with(configure: { $0.agentCommand = ["/nonexistent/agent-binary"] }, { port, _ in
            try await TestClient.with(port: port) { client in
                client.send(HandshakeTests.seedInitialize)
                let answer = try await client.next()
                #expect(answer["error"]?["code"] == .int(-32603))
                #expect(answer["error"]?["message"]?.stringValue?.contains("could not be started") == true)
            }
        })
    }
}
