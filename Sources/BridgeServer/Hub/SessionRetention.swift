/// How long the bridge keeps sessions nobody uses, and how many: the bound on idle sessions and their replay buffers.
///
/// A session is *idle* while no connection is attached to it and no `session/prompt` of it is with the agent (a phone
/// that went away while its prompt runs keeps the session busy until the prompt ends). Idle sessions are dropped,
/// the longest idle first, when there are more than ``maxIdleSessions`` of them, when their replay buffers hold more
/// than ``maxIdleReplayBytes`` together, and when one has been idle for ``idleTimeout``. A dropped session is closed
/// in the agent (`session/close`, when the agent advertises `sessionCapabilities.close`) and everything the bridge
/// kept for it is released; a phone that resumes it gets error ``BridgeMethod/sessionDroppedErrorCode``.
///
/// The defaults suit a small desktop: 64 sessions (the most one connection may hold, so a phone that comes back finds
/// all of its sessions), 64 MiB of replay (eight full 8 MiB buffers; a finished session's is usually a few KB), and a
/// day (a phone left overnight still resumes in the morning).
public struct SessionRetention: Sendable, Equatable {
    /// The most idle sessions kept; past it the longest idle are dropped.
    ///
    /// 0 keeps none.
    public var maxIdleSessions: Int
    /// The most bytes the replay buffers of idle sessions hold together (counted as in
    /// ``BridgeServerConfiguration/replayBufferBytes``); past it the longest idle are dropped.
    public var maxIdleReplayBytes: Int
    /// How long a session may stay idle before it is dropped; `nil` keeps idle sessions without a time limit.
    public var idleTimeout: Duration?

    /// The default ``maxIdleSessions``: 64.
    public static let defaultMaxIdleSessions = 64
    /// The default ``maxIdleReplayBytes``: 64 MiB.
    public static let defaultMaxIdleReplayBytes = 64 << 20
    /// The default ``idleTimeout``: 24 hours.
    public static let defaultIdleTimeout: Duration = .seconds(24 * 3600)

    /// A retention bound; every value defaults to the one a small desktop can live with.
    public init(
        maxIdleSessions: Int = SessionRetention.defaultMaxIdleSessions,
        maxIdleReplayBytes: Int = SessionRetention.defaultMaxIdleReplayBytes,
        idleTimeout: Duration? = SessionRetention.defaultIdleTimeout
    ) {
        self.maxIdleSessions = maxIdleSessions
        self.maxIdleReplayBytes = maxIdleReplayBytes
        self.idleTimeout = idleTimeout
    }
}
