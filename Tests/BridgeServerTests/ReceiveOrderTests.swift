import BridgeACP
import BridgeRPC
import BridgeServer
import BridgeTestKit
import Foundation
import Synchronization
import Testing

/// The hub handles a client's message without suspending unless it must wait (for the agent to start, for the token
/// store); what waits runs in a task of its own, and the client's next message is handled only after it.
@Suite("Receive order", .timeLimit(.minutes(1)), .tags(.loopback))
struct ReceiveOrderTests {
    /// A new agent (the bridge makes one per start): answers `initialize` (after 300 ms, so a request waiting for it
    /// really waits), `session/new`, and `session/list` with whether a `_test/mark` notification arrived before it; a
    /// prompt `exit` is answered, then the agent ends as a process that exits would.
    static func agent() -> ScriptedAgent {
        let marked = Mutex(false)
        let number = started.withLock { count in
            count += 1
            return count
        }
        return ScriptedAgent { message, peer in
            switch message {
            case .notification(let notification) where notification.method == "_test/mark":
                marked.withLock { $0 = true }
            case .request(let request):
                switch request.method {
                case "initialize":
                    try? await Task.sleep(for: .milliseconds(300))
                    peer.respond(to: request.id, result: ["protocolVersion": 1, "agentCapabilities": [:], "authMethods": []])
                case "session/new":
                    peer.respond(to: request.id, result: ["sessionId": .string("s-\(number)")])
                case "session/list":
                    peer.respond(to: request.id, result: ["sessions": [], "marked": .bool(marked.withLock { $0 })])
                case "session/prompt":
                    peer.respond(to: request.id, result: ["stopReason": "end_turn"])
                    if request.params?["prompt"]?.arrayValue?.first?["text"] == "exit" { peer.exit(reason: "the agent process exited with status 0") }
                default:
                    peer.respond(to: request.id, error: .methodNotFound(request.method))
                }
            default:
                break
            }
        }
    }

    /// How many agents the tests made (their sessions are named by it).
    private static let started = Mutex(0)

    static func request(_ id: JSONValue, _ method: String, _ params: JSONValue = [:]) -> JSONValue {
        ["jsonrpc": "2.0", "id": id, "method": .string(method), "params": params]
    }

    /// After the agent ended, a `session/new` waits for the next agent; the notification sent right after it must
    /// reach that agent (handled after the wait, not dropped as "the agent is not running" meanwhile), in a batch too.
    @Test("a client's messages are handled in order while one of them waits for the agent to start", arguments: [false, true])
    func orderAcrossAgentStart(batched: Bool) async throws {
        try await TestBridge.with(configure: { $0.inProcessAgent = { ReceiveOrderTests.agent() } }, { port, _ in
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
        })
    }

    /// `_oa/me` runs in a task of its own (it may wait for the token store); the unknown-session error that follows
    /// it in the batch is made at once, but must not overtake it (a batch's answers come in the order they were made).
    @Test("an answer made at once does not overtake the answer of an earlier message that had to wait")
    func immediateAfterWaiting() async throws {
        try await TestBridge.with(configure: { $0.inProcessAgent = { ReceiveOrderTests.agent() } }, { port, _ in
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
        })
    }
}
