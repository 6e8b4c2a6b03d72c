/// What a ``BridgeClientSession`` reports while it recovers a lost connection.
public enum BridgeReconnectEvent: Sendable, Equatable {
    /// The connection was lost (`reason`, on one line); attempt `attempt` of at most `of` (1 = the first) starts after
    /// `delay` (`of` is `nil` when the policy never gives up).
    case retrying(reason: String, delay: Duration, attempt: Int, of: Int?)
    /// A new connection answered `initialize`; the session resumes after update `afterUpdate`.
    case resuming(afterUpdate: Int)
    /// The bridge had forgotten the session, and `session/load` attached to it again (the agent replayed it); whether
    /// the prompt that was running finished is not known.
    case reloaded(sessionID: String)
}
