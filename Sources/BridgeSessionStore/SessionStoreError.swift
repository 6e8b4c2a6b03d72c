/// Why the session store could not be used.
public enum SessionStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The database could not be opened, created or written (the path and the database's own words).
    case storage(path: String, reason: String)

    /// What a user reads.
    public var description: String {
        switch self {
        case .storage(let path, let reason): "session database \(path): \(reason)"
        }
    }
}
