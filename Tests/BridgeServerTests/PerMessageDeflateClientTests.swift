import BridgeClient
import BridgeRPC
import BridgeServer
import BridgeTestKit
import Foundation
import Testing

/// The Swift client (``WebSocketConnector``) offers permessage-deflate and uses it with the real bridge (issue 32 goal
/// 5): the bridge says it negotiated, compressed answers arrive inflated, and a message the client compresses (a
/// 26 KB prompt text) reaches the agent whole; with `compression` off the same client works uncompressed.
@Suite("permessage-deflate with the Swift client", .timeLimit(.minutes(1)), .tags(.loopback))
struct PerMessageDeflateClientTests {
    static let negotiated = "permessage-deflate negotiated"

    /// initialize, session/new and a prompt whose text the demo agent streams back; returns the echo's length.
    static func converse(port: Int, cwd: String) async throws -> Int {
        let connector = WebSocketConnector(timeout: WebSocketConnectorTests.handshakeBound, logger: WebSocketConnectorTests.logger)
        let word = String(repeating: "compressible ", count: 2_000)
        return try await connector.connect(url: "ws://127.0.0.1:\(port)/") { connection in
            try await connection.send(text: #"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#)
            try await connection.send(text: #"{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"\#(cwd)","mcpServers":[]}}"#)
            var session: String?
            var echoed = 0
            for try await message in connection.messages {
                guard case .text(let text) = message else { continue }
                let value = try JSONValue(parsing: text)
                if value["id"] == 2, case .string(let id)? = value["result"]?["sessionId"] {
                    session = id
                    let prompt = #"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"\#(id)","prompt":[{"type":"text","text":"\#(word)"}]}}"#
                    try await connection.send(text: prompt)
                } else if session != nil, value["method"] == "session/update",
                          value["params"]?["update"]?["sessionUpdate"] == "agent_message_chunk",
                          case .string(let chunk)? = value["params"]?["update"]?["content"]?["text"] {
                    echoed += chunk.utf8.count
                    if echoed >= word.utf8.count { break }
                } else if value["method"] == "session/request_permission" || value["id"] == 3 {
                    break
                }
            }
            return echoed
        }
    }

    @Test("negotiated: compressed both ways, the prompt's text streamed back whole")
    func negotiated() async throws {
        let logs = TestLog()
        let echoed = try await TestBridge.with(logs: logs) { port, configuration in try await Self.converse(port: port, cwd: configuration.workingDirectory) }
        #expect(logs.count(of: Self.negotiated) == 1)
        #expect(echoed >= 26_000)
    }

    @Test("declined by the bridge (compression off): the same conversation, uncompressed")
    func declined() async throws {
        let logs = TestLog()
        let echoed = try await TestBridge.with(logs: logs, configure: { $0.compression = false }, { port, configuration in
            try await Self.converse(port: port, cwd: configuration.workingDirectory)
        })
        #expect(logs.count(of: Self.negotiated) == 0)
        #expect(echoed >= 26_000)
    }
}
