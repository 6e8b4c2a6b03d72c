/// ACP method names the bridge knows about (the same in both dialects).
public enum ACPMethod {
    /// Client -> agent: the handshake.
    public static let initialize = "initialize"
    /// Client -> agent: authenticate with one of the advertised methods.
    public static let authenticate = "authenticate"
    /// Client -> agent: create a session.
    public static let sessionNew = "session/new"
    /// Client -> agent: resume a session.
    public static let sessionLoad = "session/load"
    /// Client -> agent: send a user prompt; the result carries `stopReason`.
    public static let sessionPrompt = "session/prompt"
    /// Client -> agent notification: cancel the running prompt.
    public static let sessionCancel = "session/cancel"
    /// Client -> agent: switch the session mode.
    public static let sessionSetMode = "session/set_mode"
    /// Client -> agent: switch the session's model (unstable in the schema).
    public static let sessionSetModel = "session/set_model"
    /// Client -> agent: set one of the session's config options; the result carries every `configOptions`.
    public static let sessionSetConfigOption = "session/set_config_option"
    /// Client -> agent: reattach to a session without the history being replayed.
    public static let sessionResume = "session/resume"
    /// Client -> agent: a new session starting from an existing one's history.
    public static let sessionFork = "session/fork"
    /// Client -> agent: end a session and free its resources.
    public static let sessionClose = "session/close"
    /// Client -> agent: delete a stored session.
    public static let sessionDelete = "session/delete"
    /// Client -> agent: list stored sessions.
    public static let sessionList = "session/list"
    /// Either way, notification: the request `requestId` is no longer wanted (answered with error -32800).
    public static let cancelRequest = "$/cancel_request"
    /// Agent -> client: ask the user for structured input.
    public static let elicitationCreate = "elicitation/create"
    /// JSON-RPC error code of a request cancelled with `$/cancel_request` (ACP's "request cancelled").
    public static let requestCancelledCode = -32800
    /// JSON-RPC error code of a resource that does not exist (ACP's "resource not found"): an unknown session,
    /// terminal or file.
    public static let resourceNotFoundCode = -32002
    /// Agent -> client notification: streamed session progress.
    public static let sessionUpdate = "session/update"
    /// Agent -> client: ask the user to allow a tool call.
    public static let requestPermission = "session/request_permission"
    /// Agent -> client: read a text file.
    public static let readTextFile = "fs/read_text_file"
    /// Agent -> client: write a text file.
    public static let writeTextFile = "fs/write_text_file"
    /// Bridge -> client notification: the agent process exited (`reason`).
    public static let agentExited = "_oa/agent_exited"
    /// Bridge -> client notification: a request sent to several clients was answered by another one (`requestId`).
    public static let requestAnswered = "_oa/request_answered"
}
