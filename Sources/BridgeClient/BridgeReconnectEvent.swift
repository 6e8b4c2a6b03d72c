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
    /// The bridge holds no running or finished prompt of the session: the prompt is sent again on the new connection
    /// with the same `_meta.oa.idempotencyKey`, so the bridge runs it once. `recorded`: the bridge had recorded it
    /// before the link dropped (it restarted meanwhile), so its answer is the first one's outcome, not a new run.
    case resending(recorded: Bool)
    /// The session is read-only (the bridge restarted and its agent cannot load it) or gone and not loadable (the agent
    /// restarted): the prompt was sent to a new session `new` in the same directory instead; `reason` is the bridge's.
    case replaced(old: String, new: String, reason: String)
    /// The bridge was killed before it stored its newest updates (issue 25, F7): those numbered after `afterSeq` up
    /// to `throughSeq` that this client had not seen are lost; the turn goes on after them.
    case lostUpdates(afterSeq: Int, throughSeq: Int)
}
