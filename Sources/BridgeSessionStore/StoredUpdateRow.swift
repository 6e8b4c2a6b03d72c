public import GRDB

/// One kept `session/update` of a session (table `update`): its `_meta.seq` and its text (the notification's params,
/// or the whole notification frame the phones got).
public struct StoredUpdateRow: Sendable, Equatable, Codable, FetchableRecord, PersistableRecord {
    /// The table's name.
    public static let databaseTableName = "update"

    /// The session it belongs to.
    public var sessionId: String
    /// Its `_meta.seq`.
    public var seq: Int64
    /// Its JSON text.
    public var payload: String

    /// A row.
    public init(sessionId: String, seq: Int64, payload: String) {
        self.sessionId = sessionId
        self.seq = seq
        self.payload = payload
    }
}
