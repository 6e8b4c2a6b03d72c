/// What the store did at open with a database it could not use: it moved the file aside (never deleted it) and
/// started an empty one.
///
/// The bridge reports it as an error at start.
public struct SessionStoreRecovery: Sendable, Equatable {
    /// The database that could not be used.
    public let path: String
    /// Where it (and its `-wal` / `-shm` files, with the same suffixes) now is.
    public let movedTo: String
    /// Why it could not be used: not a database, damaged, or another program's.
    public let reason: String
}
