import BridgeRPC
import BridgeServer
import BridgeTestKit
import HummingbirdWSClient
import NIOWebSocket
import Testing

@Suite("Malformed frames over a real WebSocket", .timeLimit(.minutes(1)), .tags(.loopback))
struct MalformedFrameTests {
    /// Frame, expected error code, expected id.
    static let table: [(String, Int, JSONValue)] = [
        ("this is not json", -32700, .null),
        (#"{"jsonrpc":"2.0","method":"initialize","id":"1""#, -32700, .null),
        (#"{"jsonrpc":"1.0","method":"initialize","id":"v"}"#, -32600, "v"),
        (#"{"method":"initialize","id":3}"#, -32600, 3),
        (#"{"jsonrpc":"2.0","id":4}"#, -32600, 4),
        (#"{"jsonrpc":"2.0","method":5,"id":5}"#, -32600, 5),
        (#"{"jsonrpc":"2.0","method":"x","id":[1]}"#, -32600, .null),
        (#"{"jsonrpc":"2.0","method":"initialize","id":6,"params":"0.2.2"}"#, -32600, 6),
        (#"{"jsonrpc":"2.0","method":"initialize","id":8,"params":{"protocol_version":2}}"#, -32602, 8),
        (#"{"jsonrpc":"2.0","method":"initialize","id":9,"params":{}}"#, -32602, 9),
        ("[]", -32600, .null),
        ("42", -32600, .null),
    ]

    @Test("every malformed frame gets the right error, and the connection keeps working")
    func malformed() async throws {
        try await TestBridge.with { port, _ in
            try await TestClient.with(port: port) { client in
                for (frame, code, id) in MalformedFrameTests.table {
                    client.send(frame)
                    let answer = try await client.next()
                    #expect(answer["error"]?["code"] == .int(Int64(code)), "frame: \(frame)")
                    #expect(answer["id"] == id, "frame: \(frame)")
                    #expect(answer["error"]?["message"]?.stringValue?.isEmpty == false)
                }
                client.send(HandshakeTests.seedInitialize)
                #expect(try await client.next()["result"]?["protocol_version"] == "0.2.2")
            }
        }
    }

    @Test("a batch mixing good and bad gets one array answer with an entry per request")
    func mixedBatch() async throws {
        try await TestBridge.with { port, _ in
            try await TestClient.with(port: port) { client in
                client.send(#"[{"jsonrpc":"2.0","method":"initialize","id":"a","params":{"protocolVersion":1}},{"jsonrpc":"2.0","method":"nothing/here"},{"foo":"boo"},{"jsonrpc":"2.0","method":"initialize","id":"b","params":{"protocol_version":"9"}}]"#)
                let answer = try await client.next()
                let elements = try #require(answer.arrayValue)
                // The notification (sent before initialize) is refused separately; the batch answers a, the junk, b.
                #expect(elements.count == 3)
                let byID = Dictionary(elements.map { ($0["id"]?.jsonText ?? "?", $0) }, uniquingKeysWith: { first, _ in first })
                #expect(byID[#""a""#]?["result"]?["protocolVersion"] == .int(1))
                #expect(byID["null"]?["error"]?["code"] == .int(-32600))
                #expect(byID[#""b""#]?["error"]?["code"] == .int(-32602))
            }
        }
    }

    @Test("a batch of notifications only gets no batch answer")
    func notificationBatch() async throws {
        try await TestBridge.with { port, _ in
            try await TestClient.with(port: port) { client in
                client.send(#"{"jsonrpc":"2.0","method":"initialize","id":1,"params":{"protocolVersion":1}}"#)
                _ = try await client.next()
                client.send(#"[{"jsonrpc":"2.0","method":"_ext/one"},{"jsonrpc":"2.0","method":"_ext/two"}]"#)
                #expect(try await client.receivesNothing(for: .milliseconds(300)))
            }
        }
    }

    @Test("methods before initialize get an error", arguments: ["session/new", "session/prompt", "fs/read_text_file", "nonsense"])
    func beforeInitialize(method: String) async throws {
        try await TestBridge.with { port, _ in
            try await TestClient.with(port: port) { client in
                client.send(#"{"jsonrpc":"2.0","method":""# + method + #"","id":"x","params":{}}"#)
                let answer = try await client.next()
                #expect(answer["id"] == "x")
                #expect(answer["error"]?["code"] == .int(-32600))
                #expect(answer["error"]?["message"]?.stringValue?.contains("initialize") == true)
                // A notification before initialize is refused too (never silence).
                client.send(#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#)
                let refused = try await client.next()
                #expect(refused["id"] == .null)
                #expect(refused["error"]?["code"] == .int(-32600))
            }
        }
    }

    @Test("unknown methods after initialize get -32601")
    func unknownMethod() async throws {
        try await TestBridge.with { port, _ in
            try await TestClient.with(port: port) { client in
                client.send(HandshakeTests.seedInitialize)
                _ = try await client.next()
                client.send(#"{"jsonrpc":"2.0","method":"does/not_exist","id":11,"params":{}}"#)
                let answer = try await client.next()
                #expect(answer["id"] == .int(11))
                #expect(answer["error"]?["code"] == .int(-32601))
            }
        }
    }

    @Test("a binary frame gets a clear error")
    func binaryFrame() async throws {
        try await TestBridge.with { port, _ in
            try await TestClient.with(port: port) { client in
                client.sendBinary(Array(HandshakeTests.seedInitialize.utf8))
                let answer = try await client.next()
                #expect(answer["error"]?["code"] == .int(-32600))
                #expect(answer["error"]?["message"]?.stringValue?.contains("binary") == true)
            }
        }
    }

    @Test("an over-size message gets an error; a far larger one closes with 1009")
    func hugeFrames() async throws {
        try await TestBridge.with(configure: { $0.maxFrameSize = 4096 }, { port, _ in
            try await TestClient.with(port: port) { client in
                let padding = String(repeating: "x", count: 6000)
                client.send(#"{"jsonrpc":"2.0","method":"initialize","id":1,"params":{"pad":""# + padding + #""}}"#)
                let answer = try await client.next()
                #expect(answer["error"]?["code"] == .int(-32600))
                #expect(answer["error"]?["data"]?["limit"] == .int(4096))
                client.send(HandshakeTests.seedInitialize)
                #expect(try await client.next()["result"] != nil)
                client.send(String(repeating: "y", count: 200_000))
                let frame = try await client.waitForEnd()
                #expect(frame?.closeCode == .messageTooLarge)
            }
        })
    }

    /// On the injected clock (issue 31 item 4): the deadline passes when the test moves the clock, whatever the load.
    @Test("a connection that does not initialize in time is closed with a reason; one that initializes in time stays")
    func initializeTimeout() async throws {
        let clock = ManualClock()
        try await TestBridge.with(configure: {
            $0.clock = clock
            $0.initializeTimeout = .seconds(10)
        }, { port, _ in
            // The bridge's two sweeps sleep on the clock; then each connection's deadline does.
            try #require(await clock.waitForSleepers(2))
            let idle = clock.sleeperCount
            try await TestClient.with(port: port) { late in
                try await TestClient.with(port: port) { early in
                    #expect(await clock.waitForSleepers(idle + 2), "both connections' deadlines are on the clock")
                    clock.advance(by: .seconds(9))
                    early.send(HandshakeTests.seedInitialize)
                    #expect(try await early.next()["result"] != nil, "9 s in, the connection is open")
                    clock.advance(by: .seconds(1))
                    let frame = try await late.waitForEnd(timeout: .seconds(10))
                    #expect(frame?.closeCode == .policyViolation)
                    #expect(frame?.reason == "initialize not completed within 10 s")
                    early.send(#"{"jsonrpc":"2.0","id":"ping","method":"_oa/ping"}"#)
                    #expect(try await early.next()["result"] == [:], "the initialized connection stays open")
                }
            }
        })
    }
}
