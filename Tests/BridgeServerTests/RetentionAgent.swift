import BridgeRPC
import BridgeServer
import Foundation
import Testing

/// A small stdio agent (plain Python, no SDK) for the retention tests. With `close` it advertises
/// `sessionCapabilities.close` (with `silent`, it never answers `session/close`). Sessions are `s1`, `s2`, …; a prompt `wait` runs until `_test/finish {"sessionId"}`,
/// `bytes N` sends one update of N characters, anything else ends at once. `_test/never` is never answered.
/// `_test/log` answers what it received: `closed` (session ids), `cancelled` (`$/cancel_request` ids) and `methods`.
enum RetentionAgent {
    static let script = """
    import json, sys
    CLOSE = sys.argv[1] in ("close", "silent")
    SILENT = sys.argv[1] == "silent"
    log = {"closed": [], "cancelled": [], "methods": []}
    waiting = {}
    count = 0
    def send(m): print(json.dumps(m), flush=True)
    def answer(msg, result): send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
    for line in sys.stdin:
        msg = json.loads(line)
        method, params = msg.get("method"), msg.get("params") or {}
        if method is None:
            continue
        log["methods"].append(method)
        if method == "initialize":
            caps = {"loadSession": True}
            if CLOSE:
                caps["sessionCapabilities"] = {"close": {}}
            answer(msg, {"protocolVersion": 1, "agentCapabilities": caps, "authMethods": [], "agentInfo": {"name": "retention", "version": "1"}})
        elif method == "session/new":
            count += 1
            answer(msg, {"sessionId": "s%d" % count})
        elif method == "session/prompt":
            session, text = params["sessionId"], params["prompt"][0]["text"]
            if text == "wait":
                waiting[session] = msg["id"]
                continue
            if text.startswith("bytes "):
                chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x" * int(text.split(" ")[1])}}
                send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session, "update": chunk}})
            answer(msg, {"stopReason": "end_turn"})
        elif method == "_test/finish":
            send({"jsonrpc": "2.0", "id": waiting.pop(params["sessionId"]), "result": {"stopReason": "end_turn"}})
            answer(msg, {})
        elif method == "session/close":
            log["closed"].append(params["sessionId"])
            if not SILENT:
                answer(msg, {})
        elif method == "$/cancel_request":
            log["cancelled"].append(params["requestId"])
        elif method == "_test/log":
            answer(msg, log)
        elif method == "_test/never":
            pass
        elif "id" in msg:
            send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no " + method}})
    """

    /// A bridge running this agent on `clock`, with `retention`.
    static func bridge<T: Sendable>(
        close: Bool, silent: Bool = false, retention: SessionRetention, clock: ManualClock, logs: LogRecorder,
        _ body: @Sendable (_ port: Int) async throws -> T
    ) async throws -> T {
        try await TestBridge.with(logs: logs, configure: {
            $0.agentCommand = ["python3", "-u", "-c", script, silent ? "silent" : close ? "close" : "plain"]
            $0.retention = retention
            $0.clock = clock
        }) { port, _ in try await body(port) }
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
