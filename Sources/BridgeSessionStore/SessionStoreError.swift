/// Why the session store could not be used.
public enum SessionStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The database could not be opened, created or written (the path and the database's own words).
    case storage(path: String, reason: String)
    /// A write was asked for in a cancelled task: nothing was written, the changes stay queued for the next write.
    case cancelled

    /// What a user reads.
    public var description: String {
        switch self {
        case .storage(let path, let reason): "session database \(path): \(reason)"
        case .cancelled: "the session database write was cancelled; the changes stay queued"
        }
    }
}
