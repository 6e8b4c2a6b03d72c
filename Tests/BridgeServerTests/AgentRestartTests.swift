import BridgeACP
import BridgeRPC
import BridgeServer
import Foundation
import Logging
import Testing

/// A `session/new` that finds the agent dead before the bridge has seen its process end (issue 15: -32603 "could not
/// write to the agent" within ~100 ms of a SIGKILL) restarts the agent and goes through. The agents here stop
/// reading (and answering) while their process lives on, so the process's end is never reported: the window stays
/// open for as long as the test needs, with no timing in the test.
@Suite("Agent restart", .timeLimit(.minutes(1)), .tags(.loopback, .externalTool))
struct AgentRestartTests {
    /// Sessions are `<pid>-<n>`, so a test tells which process answered. A prompt `deaf` makes the agent close its
    /// stdin, then it is answered (`mute`: then stdout is closed too) and the agent sleeps until it is stopped. With
    /// `muteAfterInitialize` every process closes its stdin and stdout right after answering `initialize` and exits
    /// half a second later.
    static let script = """
    import json, os, sys, time
    ALWAYS = sys.argv[1] == "muteAfterInitialize"
    count = 0
    def send(m): print(json.dumps(m), flush=True)
    for line in sys.stdin:
        msg = json.loads(line)
        method, params = msg.get("method"), msg.get("params") or {}
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}})
            if ALWAYS:
                os.close(0)
                sys.stdout.flush()
                os.close(1)
                time.sleep(0.5)
                os._exit(0)
        elif method == "session/new":
            count += 1
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {"sessionId": "%d-%d" % (os.getpid(), count)}})
        elif method == "session/prompt":
            text = params["prompt"][0]["text"]
            # Stdin is closed before the answer goes out: a client that has the answer and sends more finds the agent
            # deaf already (closed after it, the next request could reach the pipe first and be lost unread, with no
            # error for the bridge: the test waited 30 s and failed under load).
            if text in ("deaf", "mute"):
                os.close(0)
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {"stopReason": "end_turn"}})
            if text in ("deaf", "mute"):
                if text == "mute":
                    sys.stdout.flush()
                    os.close(1)
                time.sleep(60)
    """

    static func agent(_ mode: String = "plain") -> [String] {
        ["python3", "-u", "-c", script, mode]
    }

    static func pid(of session: String) -> Substring {
        session.split(separator: "-").first ?? ""
    }

    @Test("a session/new sent to an agent that stopped reading its stdin starts a new agent and goes through", arguments: ["deaf", "mute"])
    func newSessionAfterDeath(_ how: String) async throws {
        try await TestBridge.with(configure: { $0.agentCommand = AgentRestartTests.agent() }) { port, _ in
            try await TestClient.with(port: port) { client in
                try await client.initialize(seed: false)
                let first = try await client.newSession(seed: false, id: "s1")
                client.prompt(seed: false, session: first, text: how, id: "p1")
                let (done, _) = try await client.collect(until: "p1")
                #expect(done["result"]?["stopReason"] == "end_turn")

                // Before the fix: -32603 "could not write to the agent: ..." (the process never ends here).
                client.send(JSONValue.object(["jsonrpc": "2.0", "id": "s2", "method": "session/new", "params": [:]]))
                let (answer, _) = try await client.collect(until: "s2", timeout: .seconds(30))
                let second = try #require(answer["result"]?["sessionId"]?.stringValue, "session/new failed: \(answer)")
                #expect(AgentRestartTests.pid(of: second) != AgentRestartTests.pid(of: first))

                // The new agent works, and the old session is gone with the old agent.
                client.prompt(seed: false, session: second, text: "hello", id: "p2")
                #expect(try await client.collect(until: "p2").0["result"]?["stopReason"] == "end_turn")
                client.prompt(seed: false, session: first, text: "hello", id: "p3")
                #expect(try await client.collect(until: "p3").0["error"] != nil)
            }
        }
    }

    /// Whichever way the request meets the agents' deaths (refused before it is sent, written and lost, or written
    /// in vain and sent again once), it ends in an error; an unbounded replay would start agent after agent.
    @Test("a session/new that no agent reads is answered with an error, not sent to agent after agent")
    func replayIsBounded() async throws {
        try await TestBridge.with(configure: { $0.agentCommand = AgentRestartTests.agent("muteAfterInitialize") }) { port, _ in
            try await TestClient.with(port: port) { client in
                try await client.initialize(seed: false)
                client.send(JSONValue.object(["jsonrpc": "2.0", "id": "s1", "method": "session/new", "params": [:]]))
                let (answer, _) = try await client.collect(until: "s1", timeout: .seconds(30))
                #expect(answer["error"]?["code"] == .int(Int64(JSONRPCError.internalErrorCode)), "\(answer)")
            }
        }
    }

    /// What the hub's replay rests on: a request whose write failed is kept (once) with its error response sent, and
    /// the agent says it can take no more; one sent with `resend` is not kept again.
    @Test("a request whose write failed can be taken back once; a resent one cannot")
    func undeliveredRequest() async throws {
        let agent = try await StdioAgent.launch(StdioAgentConfiguration(command: ["python3", "-u", "-c", """
        import os, time
        os.close(0)
        print('{"jsonrpc":"2.0","method":"closed"}', flush=True)
        time.sleep(30)
        """], terminationGrace: .milliseconds(200)), logger: Logger(label: "test.agent"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await agent.run() }
            var events = agent.events.makeAsyncIterator()
            guard case .message(.notification(let closed)) = await events.next(), closed.method == "closed" else {
                Issue.record("the agent did not start"); return
            }
            try agent.send(.request(JSONRPCRequest(id: .int(7), method: "session/new", params: ["cwd": "/"])))
            guard case .message(.response(let failed)) = await events.next() else { Issue.record("no error response"); return }
            #expect(failed.id == .int(7) && failed.error != nil)
            #expect(agent.endReason != nil)
            let kept = agent.takeUndelivered(.int(7))
            #expect(kept?.method == "session/new" && kept?.params?["cwd"] == "/")
            #expect(agent.takeUndelivered(.int(7)) == nil)

            // The agent is not stopped by its failed write (the hub stops it), so a resend still queues and fails.
            try agent.resend(JSONRPCRequest(id: .int(8), method: "session/new"))
            guard case .message(.response(let again)) = await events.next() else { Issue.record("no error response"); return }
            #expect(again.id == .int(8) && again.error != nil)
            #expect(agent.takeUndelivered(.int(8)) == nil)
            group.cancelAll()
        }
    }
}
