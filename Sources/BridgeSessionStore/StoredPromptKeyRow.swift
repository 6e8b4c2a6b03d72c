public import GRDB

/// One idempotency key of a session's prompts (table `promptKey`): the key a client sent in
/// `_meta.oa.idempotencyKey` and the prompt's outcome once it ended.
public struct StoredPromptKeyRow: Sendable, Equatable, Codable, FetchableRecord, PersistableRecord {
    /// The table's name.
    public static let databaseTableName = "promptKey"

    /// The session it belongs to.
    public var sessionId: String
    /// The client's key (1 to 128 characters).
    public var key: String
    /// Its place among the session's keys (older keys are dropped first).
    public var position: Int64
    /// The outcome as JSON text (`{"result": …}` or `{"error": …}`); `nil` while the prompt ran.
    public var outcome: String?

    /// A row.
    public init(sessionId: String, key: String, position: Int64, outcome: String?) {
        self.sessionId = sessionId
        self.key = key
        self.position = position
        self.outcome = outcome
    }
}
