/// What a ``BridgeClientSession`` reports while it recovers a lost connection.
public enum BridgeReconnectEvent: Sendable, Equatable {
    /// The connection was lost (`reason`); attempt `attempt` (1 = the first) starts after `delay`.
    case retrying(reason: String, delay: Duration, attempt: Int)
    /// A new connection answered `initialize`; the session resumes after update `afterUpdate`.
    case resuming(afterUpdate: Int)
}
