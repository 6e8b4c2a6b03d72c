/// A session as the store has it: its row, its kept updates (oldest first) and its prompts' keys (oldest first).
public struct StoredSession: Sendable, Equatable {
    /// The session.
    public var row: StoredSessionRow
    /// Its kept updates, by `seq`.
    public var updates: [StoredUpdateRow]
    /// Its idempotency keys, by position.
    public var keys: [StoredPromptKeyRow]
}
