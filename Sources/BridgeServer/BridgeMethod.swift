/// Methods the bridge adds to ACP (the `_oa/` extension namespace).
public enum BridgeMethod {
    /// Request: re-attach to a session after a reconnect and get the updates missed since `lastSeq`.
    public static let sessionResume = "_oa/session/resume"
    /// Notification: a prompt ended while the client that sent it was gone (`sessionId`, `stopReason`).
    public static let promptFinished = "_oa/prompt_finished"
    /// Error code of `_oa/session/resume` when the replay buffer no longer reaches back to `lastSeq + 1`.
    public static let gapErrorCode = -32002
}
