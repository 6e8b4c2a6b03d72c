/// Methods the bridge adds to ACP (the `_oa/` extension namespace).
public enum BridgeMethod {
    /// Request: re-attach to a session after a reconnect and get the updates missed since `lastSeq`.
    public static let sessionResume = "_oa/session/resume"
    /// Notification: a session this client was attached to was closed or deleted by another client (`sessionId`,
    /// `method`: `session/close` or `session/delete`); the client is no longer attached.
    public static let sessionClosed = "_oa/session_closed"
    /// Request, no params: answered `{}` at once, before `initialize` too (the web app's heartbeat).
    public static let ping = "_oa/ping"
    /// Notification: a prompt ended while the client that sent it was gone (`sessionId`, `stopReason`).
    public static let promptFinished = "_oa/prompt_finished"
    /// Error code of `_oa/session/resume` when the replay buffer no longer reaches back to `lastSeq + 1`.
    public static let gapErrorCode = -32002
    /// Request: who this connection authenticated as, `{"deviceId", "name", "pairedAt", "lastSeenAt",
    /// "accessTokenExpiresAt"}` (seed dialect: snake_case); no secrets.
    ///
    /// Error -32005 with `--auth none`.
    public static let me = "_oa/me"
    /// Request: unpair this device: revokes it and all its tokens, answers `{"deviceId", "revokedAt"}`, then closes
    /// every connection of the device with 4003.
    ///
    /// Error -32005 with `--auth none`.
    public static let logout = "_oa/logout"
    /// Error code when a connection would pass ``BridgeServerConfiguration/maxSessionsPerConnection``.
    public static let tooManySessionsErrorCode = -32003
    /// Error code of a batch larger than ``BridgeServerConfiguration/maxBatchSize`` (none of it is run).
    public static let batchTooLargeErrorCode = -32004
    /// Error code of `_oa/me` / `_oa/logout` on a connection without a paired device (`--auth none`).
    public static let noDeviceErrorCode = -32005
}
