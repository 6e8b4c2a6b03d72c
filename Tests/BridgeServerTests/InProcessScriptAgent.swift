import BridgeRPC
import BridgeServer
import BridgeTestKit
import Synchronization

/// The scripted conformance agent (`Tests/system/agents/acp_script_agent.py`, written with the official Python SDK) as
/// a ``ScriptedAgent`` in the test's process, for the suites whose point is the bridge, not the SDK (the terminal
/// and capability tests): no interpreter to start, so their timing is the test's (issue 31 item 4). It answers as the
/// Python agent does: `initialize` with every session capability (and, with `auth`, three auth methods: `oauth`,
/// `key` of type env_var needing `SCRIPT_TEST_KEY`, `tui` of type terminal), `session/new` after an
/// `available_commands_update`, and a prompt by its first word:
///
/// - `call <method> <JSON object>`: sends that request with the session's id added, reports `call <result as JSON>`
///   or `call error: <code> <data>`;
/// - `update <JSON object>`: sends it as the `update` of a `session/update`;
/// - `die`: the agent ends as a process that exits with status 3;
/// - anything else: `heard: <text>`.
///
/// `_test/log` answers the client capabilities it was told, the auth methods it was asked for (`authenticated`) and
/// the sessions closed.
enum InProcessScriptAgent {
    /// A bridge running the agent (with `configure` applied after).
    static func bridge<T: Sendable>(
        auth: Bool = false,
        configure: @escaping (inout BridgeServerConfiguration) -> Void = { _ in },
        _ body: @Sendable (_ port: Int, _ configuration: BridgeServerConfiguration) async throws -> T
    ) async throws -> T {
        try await TestBridge.with(configure: {
            $0.inProcessAgent = { InProcessScriptAgent.agent(auth: auth) }
            configure(&$0)
        }, body)
    }

    /// One agent (each start of the agent gets a new one).
    static func agent(auth: Bool) -> ScriptedAgent {
        let log = Mutex<[String: JSONValue]>(["closed": [], "deleted": [], "cancel_request": []])
        let sessions = Mutex(0)
        return ScriptedAgent { message, peer in
            guard case .request(let request) = message else { return }
            let params = request.params ?? [:]
            switch request.method {
            case "initialize":
                if let capabilities = params["clientCapabilities"] { log.withLock { $0["clientCapabilities"] = capabilities } }
                peer.respond(to: request.id, result: initializeResult(auth: auth))
            case "authenticate":
                log.withLock { $0["authenticated"] = .array(($0["authenticated"]?.arrayValue ?? []) + [params["methodId"] ?? .null]) }
                peer.respond(to: request.id, result: [:])
            case "session/new":
                let number = sessions.withLock {
                    $0 += 1
                    return $0
                }
                let id = JSONValue.string("s-\(number)")
                peer.notify("session/update", params: ["sessionId": id, "update": [
                    "sessionUpdate": "available_commands_update",
                    "availableCommands": [["name": "review", "description": "Review the change"]],
                ]])
                peer.respond(to: request.id, result: ["sessionId": id, "modes": modes("ask")])
            case "session/load":
                say("loaded history", in: params["sessionId"] ?? .null, peer)
                peer.respond(to: request.id, result: ["modes": modes("code")])
            case "session/close":
                log.withLock { $0["closed"] = .array(($0["closed"]?.arrayValue ?? []) + [params["sessionId"] ?? .null]) }
                peer.respond(to: request.id, result: [:])
            case "session/prompt":
                await prompt(request, peer)
            case "_test/log":
                var answer = log.withLock { $0 }
                answer["echo"] = params
                peer.respond(to: request.id, result: .object(answer))
            default:
                peer.respond(to: request.id, error: .methodNotFound(request.method))
            }
        }
    }

    private static func initializeResult(auth: Bool) -> JSONValue {
        var result: [String: JSONValue] = [
            "protocolVersion": 1,
            "agentCapabilities": [
                "loadSession": true, "promptCapabilities": ["image": true],
                "sessionCapabilities": ["resume": [:], "fork": [:], "close": [:], "list": [:], "delete": [:]],
            ],
            "agentInfo": ["name": "script-agent", "title": "Scripted SDK agent", "version": "1.0"],
            "authMethods": [],
        ]
        if auth {
            result["authMethods"] = [
                ["id": "oauth", "name": "Log in"],
                ["type": "env_var", "id": "key", "name": "API key", "vars": [["name": "SCRIPT_TEST_KEY"]]],
                ["type": "terminal", "id": "tui", "name": "Terminal login", "args": ["--login"]],
            ]
        }
        return .object(result)
    }

    private static func modes(_ current: String) -> JSONValue {
        ["currentModeId": .string(current), "availableModes": [["id": "ask", "name": "Ask"], ["id": "code", "name": "Code"]]]
    }

    private static func say(_ text: String, in session: JSONValue, _ peer: ScriptedAgent.Peer) {
        peer.notify("session/update", params: ["sessionId": session, "update": [
            "sessionUpdate": "agent_message_chunk", "content": ["type": "text", "text": .string(text)],
        ]])
    }

    private static func prompt(_ request: JSONRPCRequest, _ peer: ScriptedAgent.Peer) async {
        let session = request.params?["sessionId"] ?? .null
        let text = (request.params?["prompt"]?.arrayValue ?? []).compactMap { $0["text"]?.stringValue }.joined(separator: " ")
        let words = text.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        switch words.first {
        case "call" where words.count == 3:
            var params = (try? JSONValue(parsing: words[2]))?.objectValue ?? [:]
            params["sessionId"] = session
            let answer = await peer.ask(words[1], params: .object(params))
            switch answer.outcome {
            case .success(let result):
                say("call " + result.jsonText, in: session, peer)
            case .failure(let error):
                say("call error: \(error.code)" + (error.data.map { " " + $0.jsonText } ?? ""), in: session, peer)
            }
        case "update":
            let update = (try? JSONValue(parsing: String(text.dropFirst("update ".count)))) ?? .null
            peer.notify("session/update", params: ["sessionId": session, "update": update])
        case "die":
            peer.exit(reason: "the agent process exited with status 3")
            return
        default:
            say("heard: " + text, in: session, peer)
        }
        peer.respond(to: request.id, result: ["stopReason": "end_turn"])
    }
}
