import Foundation
public import GRDB

/// Why the pairing state (its directory, or its SQLite database `pairing.sqlite`) could not be used: what the bridge was
/// doing, on which path, and the cause as the system or SQLite gave it — errno, or GRDB's `ResultCode` — so a caller
/// tells a read-only or full disk, a busy or damaged database apart by value, never by the text.
public struct PairingStorageFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// What the bridge was doing.
    public enum Action: String, Sendable, Equatable {
        /// Creating the state directory or one of its parents.
        case createDirectory = "create the directory"
        /// Making a file or directory private to this user (`chmod`).
        case restrict = "restrict the permissions of"
        /// Creating the database file.
        case createFile = "create"
        /// Opening the database (and bringing its schema up to date).
        case open = "open"
        /// Reading from the database.
        case read = "read from"
        /// Writing to the database.
        case write = "write to"
    }

    /// Why it failed.
    public enum Cause: Sendable, Equatable {
        /// SQLite refused: its extended result code as GRDB gives it (`DatabaseError.extendedResultCode`), and
        /// SQLite's message.
        case sqlite(ResultCode, message: String?)
        /// The system refused, with this `errno`.
        case system(errno: Int32)
        /// The path exists and is not a directory.
        case notADirectory
        /// Anything else, in its own words.
        case other(String)
    }

    /// What the bridge was doing.
    public var action: Action
    /// The file or directory.
    public var path: String
    /// Why it failed.
    public var cause: Cause

    /// A failure to do `action` on `path` because of `cause`.
    public init(_ action: Action, path: String, cause: Cause) {
        self.action = action
        self.path = path
        self.cause = cause
    }

    /// A failure to do `action` on `path` because of `error`: a GRDB `DatabaseError` keeps its result code.
    public init(_ action: Action, path: String, error: any Error) {
        if let error = error as? DatabaseError {
            self.init(action, path: path, cause: .sqlite(error.extendedResultCode, message: error.message))
        } else {
            self.init(action, path: path, cause: .other("\(error)"))
        }
    }

    /// SQLite's primary result code (`SQLITE_READONLY`, `SQLITE_FULL`, `SQLITE_BUSY`…), when SQLite failed.
    public var resultCode: ResultCode? {
        if case .sqlite(let code, _) = cause { code.primaryResultCode } else { nil }
    }

    /// `errno`, when the system refused.
    public var errno: Int32? {
        if case .system(let number) = cause { number } else { nil }
    }

    /// "cannot write to /…/pairing.sqlite: attempt to write a readonly database (SQLite result code 8)".
    public var description: String {
        let reason: String
        switch cause {
        case .sqlite(let code, let message):
            reason = "\(message ?? String(describing: code)) (SQLite result code \(code.rawValue))"
        case .system(let number):
            reason = String(cString: strerror(number))
        case .notADirectory:
            reason = "it exists and is not a directory"
        case .other(let text):
            reason = text
        }
        return "cannot \(action.rawValue) \(path): \(reason)"
    }
}
