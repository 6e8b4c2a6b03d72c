import BridgeACP
import BridgeRPC
import BridgeServer
import Foundation
import Testing

/// The hub handles a client's message without suspending unless it must wait (for the agent to start, for the token
/// store); what waits runs in a task of its own, and the client's next message is handled only after it.
@Suite("Receive order", .timeLimit(.minutes(1)), .tags(.loopback, .externalTool))
struct ReceiveOrderTests {
    /// Answers `initialize` (slowly, so a request waiting for it really waits), `session/new`, and `session/list`
    /// with whether a `_test/mark` notification arrived before it; a prompt `exit` is answered, then the process ends.
    static let script = """
    import json, os, sys, time
    marked = False
    def send(m): print(json.dumps(m), flush=True)
    for line in sys.stdin:
        msg = json.loads(line)
        method = msg.get("method")
        if method == "initialize":
            time.sleep(0.3)
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}})
        elif method == "session/new":
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {"sessionId": "s-%d" % os.getpid()}})
        elif method == "_test/mark":
            marked = True
        elif method == "session/list":
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {"sessions": [], "marked": marked}})
        elif method == "session/prompt":
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {"stopReason": "end_turn"}})
            if msg["params"]["prompt"][0]["text"] == "exit":
                sys.stdout.flush()
                os._exit(0)
    """

    static func request(_ id: JSONValue, _ method: String, _ params: JSONValue = [:]) -> JSONValue {
        ["jsonrpc": "2.0", "id": id, "method": .string(method), "params": params]
    }

    /// After the agent ended, a `session/new` waits for the next agent; the notification sent right after it must
    /// reach that agent (handled after the wait, not dropped as "the agent is not running" meanwhile), in a batch too.
    @Test("a client's messages are handled in order while one of them waits for the agent to start", arguments: [false, true])
    func orderAcrossAgentStart(batched: Bool) async throws {
        try await TestBridge.with(configure: { $0.agentCommand = ["python3", "-u", "-c", ReceiveOrderTests.script] }) { port, _ in
            try await TestClient.with(port: port) { client in
                try await client.initialize(seed: false)
                let first = try await client.newSession(seed: false, id: "s1")
                client.prompt(seed: false, session: first, text: "exit", id: "p1")
                _ = try await client.collect(until: "p1")
                _ = try await client.next(timeout: .seconds(15)) { $0["method"] == .string(ACPMethod.agentExited) }

                let messages: [JSONValue] = [
                    ReceiveOrderTests.request("s2", ACPMethod.sessionNew),
                    ["jsonrpc": "2.0", "method": "_test/mark", "params": [:]],
                    ReceiveOrderTests.request("list", ACPMethod.sessionList),
                    ReceiveOrderTests.request("p2", ACPMethod.sessionPrompt, ["sessionId": "nope", "prompt": []]),
                ]
                var answers: [JSONValue] = []
                if batched {
                    client.send(JSONValue.array(messages))
                    let (batch, _) = try await client.next(timeout: .seconds(15)) { $0.arrayValue != nil }
                    answers = batch.arrayValue ?? []
                } else {
                    for message in messages { client.send(message) }
                    // The bridge's own error for p2 may come before the agent's answer to list.
                    while answers.count < 3 {
                        let (answer, _) = try await client.next(timeout: .seconds(15)) { $0["id"] != nil && $0["method"] == nil }
                        answers.append(answer)
                    }
                }
                let byID = Dictionary(answers.compactMap { answer in answer["id"]?.stringValue.map { ($0, answer) } }, uniquingKeysWith: { first, _ in first })
                #expect(byID["s2"]?["result"]?["sessionId"] != nil, "\(answers)")
                // Before the agent started, the notification would have been dropped.
                #expect(byID["list"]?["result"]?["marked"] == true, "\(answers)")
                #expect(byID["p2"]?["error"] != nil, "\(answers)")
            }
        }
    }

    /// `_oa/me` runs in a task of its own (it may wait for the token store); the unknown-session error that follows
    /// it in the batch is made at once, but must not overtake it (a batch's answers come in the order they were made).
    @Test("an answer made at once does not overtake the answer of an earlier message that had to wait")
    func immediateAfterWaiting() async throws {
        try await TestBridge.with(configure: { $0.agentCommand = ["python3", "-u", "-c", ReceiveOrderTests.script] }) { port, _ in
            try await TestClient.with(port: port) { client in
                try await client.initialize(seed: false)
                let rounds = 10
                var messages: [JSONValue] = []
                var expected: [String] = []
                for round in 0..<rounds {
                    messages.append(ReceiveOrderTests.request(.string("me\(round)"), BridgeMethod.me))
                    messages.append(ReceiveOrderTests.request(.string("p\(round)"), ACPMethod.sessionPrompt, ["sessionId": "nope", "prompt": []]))
                    expected += ["me\(round)", "p\(round)"]
                }
                client.send(JSONValue.array(messages))
                let (batch, _) = try await client.next(timeout: .seconds(15)) { $0.arrayValue != nil }
                let answers = batch.arrayValue ?? []
                let failed = answers.filter { answer in answer["error"] != nil }
                #expect(failed.count == answers.count, "\(answers)")
                let ids = answers.map { answer in answer["id"]?.stringValue ?? "?" }
                #expect(ids == expected)
            }
        }
    }
}
