public import GRDB

/// Why the session store could not be used.
public enum SessionStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The database could not be opened, created or written: the path, the database's own words, and SQLite's
    /// extended result code as GRDB gives it (`DatabaseError.extendedResultCode`) when SQLite refused.
    case storage(path: String, reason: String, resultCode: ResultCode? = nil)
    /// A write was asked for in a cancelled task: nothing was written, the changes stay queued for the next write.
    case cancelled

    /// What a user reads.
    public var description: String {
        switch self {
        case .storage(let path, let reason, _): "session database \(path): \(reason)"
        case .cancelled: "the session database write was cancelled; the changes stay queued"
        }
    }
}

extension SessionStoreError {
    /// `what` failed on the database at `path` because of `error`; a GRDB `DatabaseError` keeps its result code.
    static func storage(path: String, _ what: String, _ error: any Error) -> SessionStoreError {
        .storage(path: path, reason: "\(what) (\(error))", resultCode: (error as? DatabaseError)?.extendedResultCode)
    }
}
