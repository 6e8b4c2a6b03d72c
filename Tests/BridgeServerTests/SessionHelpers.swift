import BridgeRPC
import BridgeTestKit
import Foundation
import Testing

/// Small steps of the ACP conversation, in either dialect, for the session tests.
extension TestClient {
    /// Sends `initialize` in the seed dialect (`seed`) or ACP v1, returns the result.
    @discardableResult
    func initialize(seed: Bool) async throws -> JSONValue {
        if seed {
            send(HandshakeTests.seedInitialize)
        } else {
            send(#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{},"clientInfo":{"name":"test","version":"1"}}}"#)
        }
        let answer = try await next()
        return try #require(answer["result"], "initialize failed: \(answer)")
    }

    /// Creates a session, returns its id.
    func newSession(seed: Bool, id: JSONValue = "new", cwd: String? = nil) async throws -> String {
        var params: [String: JSONValue] = [:]
        if let cwd { params["cwd"] = .string(cwd) }
        send(JSONValue.object(["jsonrpc": "2.0", "id": id, "method": "session/new", "params": .object(params)]))
        let (answer, _) = try await next { $0["id"] == id }
        let key = seed ? "session_id" : "sessionId"
        return try #require(answer["result"]?[key]?.stringValue, "session/new failed: \(answer)")
    }

    /// Sends a text prompt.
    func prompt(seed: Bool, session: String, text: String, id: JSONValue = "prompt") {
        let sessionKey = seed ? "session_id" : "sessionId"
        send(JSONValue.object([
            "jsonrpc": "2.0", "id": id, "method": "session/prompt",
            "params": .object([sessionKey: .string(session), "prompt": [["type": "text", "text": .string(text)]]]),
        ]))
    }

    /// Reads frames until the response with `id`; returns it and everything before it.
    func collect(until id: JSONValue, timeout: Duration = TestBounds.notUnderTest) async throws -> (JSONValue, [JSONValue]) {
        try await next(timeout: timeout) { $0["id"] == id && $0["method"] == nil }
    }
}

/// The text of every `agent_message_chunk` in `frames`, concatenated.
func chunkText(_ frames: [JSONValue], seed: Bool) -> String {
    let updateKey = seed ? "session_update" : "sessionUpdate"
    return frames.compactMap { frame -> String? in
        guard frame["method"] == "session/update", frame["params"]?["update"]?[updateKey] == "agent_message_chunk" else { return nil }
        return frame["params"]?["update"]?["content"]?["text"]?.stringValue
    }.joined()
}

/// Where the EchoAgent example was built (next to the test bundle).
func echoAgentPath() throws -> String {
    let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    for candidate in [directory, directory.deletingLastPathComponent()] {
        let path = candidate.appendingPathComponent("EchoAgent").path
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    throw TestClientError.closed
}
