extension BridgeMethod {
    /// Error code of `_oa/session/resume`, `session/resume` and `session/load` for a session the bridge dropped because
    /// it was idle too long or past the bound on idle sessions (see ``SessionRetention``); `data.sessionId`, and
    /// `data.reason`: `idle_timeout`, `max_idle_sessions` or `max_idle_replay_bytes`.
    ///
    /// Start over with `session/new`.
    public static let sessionDroppedErrorCode = -32006
}
