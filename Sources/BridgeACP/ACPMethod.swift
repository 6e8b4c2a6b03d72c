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
