import BridgeRPC
import BridgeServer
import BridgeTestKit
import Foundation
import Testing

/// The bridge with an agent scripted in the test's process (BridgeTestKit's ``ScriptedAgent``): what these tests check
/// does not need a process, and a Python agent's start took seconds on a loaded 2-core machine (these tests used to
/// embed `python3 -c` agents and timed out beside builds).
@Suite("A scripted in-process agent behind the bridge", .timeLimit(.minutes(1)), .tags(.loopback))
struct ScriptedAgentBridgeTests {
    @Test("a slow agent start does not trip the initialize deadline of a client that is initializing")
    func slowAgent() async throws {
        let (asked, askedSink) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let (release, releaseSink) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let agent = ScriptedAgent { message, peer in
            guard case .request(let request) = message, request.method == "initialize" else { return }
            askedSink.yield()
            // Held until the test has seen the deadline pass twice.
            var gate = release.makeAsyncIterator()
            _ = await gate.next()
            peer.respond(to: request.id, result: ["protocolVersion": 1, "agentCapabilities": [:], "authMethods": []])
        }
        // The deadline runs on a clock the test moves (issue 31 item 4): two deadlines pass while the agent starts.
        let clock = ManualClock()
        try await TestBridge.with(configure: {
            $0.inProcessAgent = { agent }
            $0.clock = clock
            $0.initializeTimeout = .seconds(10)
        }, { port, _ in
            try #require(await clock.waitForSleepers(2))
            let idle = clock.sleeperCount
            try await TestClient.with(port: port) { client in
                client.send(HandshakeTests.seedInitialize)
                var started = asked.makeAsyncIterator()
                _ = await started.next()
                for _ in 0..<2 {
                    try #require(await clock.waitForSleepers(idle + 1), "the deadline is armed (again)")
                    clock.advance(by: .seconds(10))
                }
                // The second deadline found the initialize still answered and armed a third.
                #expect(await clock.waitForSleepers(idle + 1))
                releaseSink.yield()
                let answer = try await client.next(timeout: .seconds(30))
                #expect(answer["result"]?["protocol_version"] == "0.2.2")
            }
        })
    }

    @Test("session/load of a session the bridge does not run goes to an agent that can load: history replay, then attached")
    func loadFromAgent() async throws {
        let agent = ScriptedAgent { message, peer in
            guard case .request(let request) = message else { return }
            switch request.method {
            case "initialize":
                peer.respond(to: request.id, result: [
                    "protocolVersion": 1, "agentCapabilities": ["loadSession": true], "authMethods": [],
                    "agentInfo": ["name": "loader", "version": "1"],
                ])
            case "session/load":
                guard request.params?["sessionId"] == "old-1" else {
                    peer.respond(to: request.id, error: JSONRPCError(code: -32002, message: "no such session"))
                    return
                }
                peer.notify("session/update", params: [
                    "sessionId": "old-1",
                    "update": ["sessionUpdate": "user_message_chunk", "content": ["type": "text", "text": "earlier question"]],
                ])
                peer.respond(to: request.id, result: [:])
            case "session/prompt":
                peer.respond(to: request.id, result: ["stopReason": "end_turn"])
            default:
                peer.respond(to: request.id, error: .methodNotFound(request.method))
            }
        }
        try await TestBridge.with(configure: { $0.inProcessAgent = { agent } }, { port, _ in
            try await TestClient.with(port: port) { client in
                try await client.initialize(seed: true)
                client.send(#"{"jsonrpc":"2.0","id":"bad","method":"session/load","params":{"session_id":"nope"}}"#)
                #expect(try await client.collect(until: "bad").0["error"]?["code"] == .int(-32002))
                client.send(#"{"jsonrpc":"2.0","id":"load","method":"session/load","params":{"session_id":"old-1","mcp_servers":[]}}"#)
                let (loaded, replay) = try await client.collect(until: "load")
                // The agent answered {}: the bridge's keys are merged into its (empty) _meta (issue 28 item 4).
                #expect(loaded["result"] == ["_meta": ["lastSeq": 1, "promptRunning": false]])
                #expect(replay.first?["params"]?["update"]?["session_update"] == "user_message_chunk")
                client.prompt(seed: true, session: "old-1", text: "go on")
                #expect(try await client.collect(until: "prompt").0["result"]?["stop_reason"] == "end_turn")
                // The failed load did not leave the client attached to "nope".
                client.prompt(seed: true, session: "nope", text: "x", id: "p2")
                #expect(try await client.collect(until: "p2").0["error"]?["code"] == .int(-32002))
            }
        })
    }

    @Test("seed dialect: an initialize answer whose keys collide in snake_case is an error for the seed phone, whole for an official one")
    func collidingInitializeAnswer() async throws {
        let agent = ScriptedAgent { message, peer in
            guard case .request(let request) = message, request.method == "initialize" else { return }
            peer.respond(to: request.id, result: ["protocolVersion": 1, "agentCapabilities": ["fooBar": 1, "foo_bar": 2], "authMethods": []])
        }
        try await TestBridge.with(configure: { $0.inProcessAgent = { agent } }, { port, _ in
            try await TestClient.with(port: port) { client in
                client.send(HandshakeTests.seedInitialize)
                let answer = try await client.next()
                #expect(answer["error"]?["code"] == .int(-32603), "\(answer)")
                #expect(answer["error"]?["data"]?["key"] == "foo_bar")
                #expect(answer["result"] == nil)
            }
            try await TestClient.with(port: port) { client in
                let result = try await client.initialize(seed: false)
                #expect(result["agentCapabilities"]?["fooBar"] == 1, "\(result)")
                #expect(result["agentCapabilities"]?["foo_bar"] == 2)
            }
        })
    }
}
