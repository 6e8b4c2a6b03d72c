import BridgeRPC

/// An editor's request that the relay sent (or will send) to the bridge and that is not answered yet.
struct RelayedRequest: Sendable {
    /// The request as it goes to the bridge (a prompt with its idempotency key).
    var request: JSONRPCRequest
    /// Its text as it goes to the bridge: the editor's bytes (a prompt's with the key added as one member).
    var text: String
    /// The order in which the editor sent it (requests are resent in that order).
    var order: Int
    /// The link generation it was sent on, `nil` while it waits in the outbox.
    var sentOn: Int?
    /// For a prompt sent on a link that dropped and followed on the bridge after the resume: answered when the bridge
    /// says the prompt finished (`_oa/prompt_finished`).
    var following = false

    /// The session it is about, if any.
    var sessionID: String? { request.params?["sessionId"]?.stringValue }

    /// Requests that give the same result when sent twice: resent after a reconnect when their answer was lost.
    static let repeatable: Set<String> = [
        "session/load", "session/resume", "session/list", "session/set_mode", "session/set_model",
        "session/set_config_option", "_oa/ping", "_oa/me",
    ]
}

/// What the relay knows of a session the editor opened through it.
struct RelayedSession: Sendable {
    /// Its directory and MCP servers, to `session/load` it again when the bridge forgot it.
    var cwd: String
    var mcpServers: JSONValue
}

/// Something the editor sent that waits for a link.
enum RelayOutgoing: Sendable {
    /// A request, by id (its text is in the pending table).
    case request(JSONRPCID)
    /// A notification, an answer, a batch: the editor's text, passed on as it came.
    case raw(String)
}
