import BridgeRPC
import BridgeServer
import BridgeTestKit
import Foundation
import Synchronization
import Testing

/// A small scripted agent (BridgeTestKit; it was a Python script) for the retention tests.
///
/// With `close` it advertises `sessionCapabilities.close` (with `silent`, it never answers `session/close`). Sessions
/// are `s1`, `s2`, …; a prompt `wait` runs until `_test/finish {"sessionId"}`, `bytes N` sends one update of N
/// characters, anything else ends at once. `_test/never` is never answered. `_test/log` answers what it received:
/// `closed` (session ids), `cancelled` (`$/cancel_request` ids) and `methods`.
enum RetentionAgent {
    private struct Log {
        var closed: [JSONValue] = []
        var cancelled: [JSONValue] = []
        var methods: [JSONValue] = []
        var waiting: [String: JSONRPCID] = [:]
        var count = 0
    }

    /// A new agent.
    static func agent(close: Bool, silent: Bool) -> ScriptedAgent {
        let log = Mutex(Log())
        return ScriptedAgent { message, peer in
            guard let method = message.method else { return }
            log.withLock { $0.methods.append(.string(method)) }
            let params = message.params ?? [:]
            if case .notification = message {
                if method == "$/cancel_request" { log.withLock { $0.cancelled.append(params["requestId"] ?? .null) } }
                return
            }
            guard case .request(let request) = message else { return }
            switch method {
            case "initialize":
                var capabilities: JSONValue = ["loadSession": true]
                if close { capabilities = ["loadSession": true, "sessionCapabilities": ["close": [:]]] }
                peer.respond(to: request.id, result: [
                    "protocolVersion": 1, "agentCapabilities": capabilities, "authMethods": [],
                    "agentInfo": ["name": "retention", "version": "1"],
                ])
            case "session/new":
                let number = log.withLock { log in
                    log.count += 1
                    return log.count
                }
                peer.respond(to: request.id, result: ["sessionId": .string("s\(number)")])
            case "session/prompt":
                let session = params["sessionId"]?.stringValue ?? ""
                let text = params["prompt"]?.arrayValue?.first?["text"]?.stringValue ?? ""
                if text == "wait" {
                    log.withLock { $0.waiting[session] = request.id }
                    return
                }
                if text.hasPrefix("bytes "), let count = Int(text.dropFirst("bytes ".count)) {
                    peer.notify("session/update", params: [
                        "sessionId": .string(session),
                        "update": ["sessionUpdate": "agent_message_chunk", "content": ["type": "text", "text": .string(String(repeating: "x", count: count))]],
                    ])
                }
                peer.respond(to: request.id, result: ["stopReason": "end_turn"])
            case "_test/finish":
                let session = params["sessionId"]?.stringValue ?? ""
                if let waiting = log.withLock({ $0.waiting.removeValue(forKey: session) }) {
                    peer.respond(to: waiting, result: ["stopReason": "end_turn"])
                }
                peer.respond(to: request.id, result: [:])
            case "session/close":
                log.withLock { $0.closed.append(params["sessionId"] ?? .null) }
                if !silent { peer.respond(to: request.id, result: [:]) }
            case "_test/log":
                let result = log.withLock { log -> JSONValue in
                    ["closed": .array(log.closed), "cancelled": .array(log.cancelled), "methods": .array(log.methods)]
                }
                peer.respond(to: request.id, result: result)
            case "_test/never":
                break
            default:
                peer.respond(to: request.id, error: JSONRPCError(code: -32601, message: "no " + method))
            }
        }
    }

    /// A bridge running this agent on `clock`, with `retention`.
    static func bridge<T: Sendable>(
        close: Bool, silent: Bool = false, retention: SessionRetention, clock: ManualClock, logs: TestLog,
        _ body: @Sendable (_ port: Int) async throws -> T
    ) async throws -> T {
        try await TestBridge.with(logs: logs, configure: {
            $0.inProcessAgent = { RetentionAgent.agent(close: close, silent: silent) }
            $0.retention = retention
            $0.clock = clock
        }, { port, _ in try await body(port) })
    }
}

extension TestClient {
    /// `_oa/session/resume` of `session` from `lastSeq` 0 (in the client's dialect); returns the answer.
    func resumeSession(_ session: String, seed: Bool, id: JSONValue = "resume") async throws -> JSONValue {
        let params: JSONValue = seed ? ["session_id": .string(session), "last_seq": 0] : ["sessionId": .string(session), "lastSeq": 0]
        send(JSONValue.object(["jsonrpc": "2.0", "id": id, "method": "_oa/session/resume", "params": params]))
        return try await collect(until: id).0
    }

    /// What the retention agent received (`_test/log`).
    func agentLog() async throws -> JSONValue {
        send(#"{"jsonrpc":"2.0","id":"log","method":"_test/log","params":{}}"#)
        return try #require(try await collect(until: "log").0["result"])
    }
}
