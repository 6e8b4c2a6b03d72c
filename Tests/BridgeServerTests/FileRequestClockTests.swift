import BridgeRPC
import BridgeTestKit
import NIOPosix
import Testing
@testable import BridgeServer

/// The time limit of the agent's file calls (``BridgeServerConfiguration/fileRequestTimeout``) runs on the bridge's
/// clock (issue 31 leftover), as its other timers do, not on a clock read directly.
@Suite("File requests on the bridge's clock", .timeLimit(.minutes(1)), .tags(.loopback))
struct FileRequestClockTests {
    /// An agent whose prompt asks the bridge for `a.txt` and says what it got back in a message chunk
    /// (`fs: <error code>` or `fs: read`), then ends the turn.
    static func agent() -> ScriptedAgent {
        ScriptedAgent { message, peer in
            guard case .request(let request) = message else { return }
            switch request.method {
            case "initialize":
                peer.respond(to: request.id, result: ["protocolVersion": 1, "agentCapabilities": [:], "authMethods": []])
            case "session/new":
                peer.respond(to: request.id, result: ["sessionId": "s-1"])
            case "session/prompt":
                let session = request.params?["sessionId"] ?? .null
                let answer = await peer.ask("fs/read_text_file", params: ["sessionId": session, "path": "a.txt"])
                let said = switch answer.outcome {
                case .success: "fs: read"
                case .failure(let error): "fs: \(error.code)"
                }
                peer.notify("session/update", params: [
                    "sessionId": session, "update": ["sessionUpdate": "agent_message_chunk", "content": ["type": "text", "text": .string(said)]],
                ])
                peer.respond(to: request.id, result: ["stopReason": "end_turn"])
            default:
                peer.respond(to: request.id, result: [:])
            }
        }
    }

    @Test("a file call held up past fileRequestTimeout on the bridge's clock is answered -32603 when that clock passes it")
    func limitOnTheBridgeClock() async throws {
        let clock = ManualClock()
        // The file call waits behind a job that holds the pool's one thread until the test ends: only its time limit
        // can answer it.
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        let gate = ThreadGate()
        pool.submit { _ in _ = gate.wait() }
        defer { gate.open() }
        try await TestBridge.with(configure: {
            $0.clock = clock
            // An hour: on a clock read directly, no answer comes while the test runs.
            $0.fileRequestTimeout = .seconds(3600)
            $0.fileThreadPool = pool
            $0.inProcessAgent = { FileRequestClockTests.agent() }
        }, { port, _ in
            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: false)
                let session = try await phone.newSession(seed: false)
                phone.prompt(seed: false, session: session, text: "read a.txt")
                // The limit's sleep starts once the hub has the agent's request: the clock moves an hour at a time
                // (30 times at most, a second of real time apart: a full parallel run holds its first tests up for 8-15 s)
                // until the agent says what it got.
                var said: String?
                for _ in 0..<30 where said == nil {
                    clock.advance(by: .seconds(3600))
                    let chunk = try? await phone.next(timeout: .seconds(1)) {
                        $0["params"]?["update"]?["content"]?["text"]?.stringValue?.hasPrefix("fs: ") == true
                    }
                    said = chunk?.0["params"]?["update"]?["content"]?["text"]?.stringValue
                }
                #expect(said == "fs: -32603", "the agent got \(said ?? "no answer")")
                let (answer, _) = try await phone.collect(until: "prompt")
                #expect(answer["result"]?["stopReason"] == "end_turn")
            }
        })
        gate.open()
        try await pool.shutdownGracefully()
    }
}
