import BridgeACP
package import BridgeRPC
import BridgeTime

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why an agent's `fs/read_text_file` or `fs/write_text_file` was refused or failed.
///
/// Matched by case; ``rpcError`` is the answer the agent gets (-32602 for a path the bridge refuses, -32002 for a
/// missing file, -32603 otherwise).
package enum WorkspaceFileError: Error, Equatable, Sendable {
    /// The path holds a NUL byte (the kernel would cut it there); refused, never shortened.
    case containsNUL(path: String)
    /// The path is longer than `limit` bytes (PATH_MAX).
    case tooLong(path: String, bytes: Int, limit: Int)
    /// The path has more than `limit` components.
    case tooManyComponents(path: String, count: Int, limit: Int)
    /// The path has a `..` component.
    case parentComponent(path: String)
    /// The path, or a symbolic link on it, leads outside the working directory `root`.
    case outside(path: String, root: String, why: String)
    /// No such file.
    case notFound(path: String)
    /// The path ends in a symbolic link whose target does not exist; it is neither followed nor replaced.
    case danglingSymbolicLink(path: String)
    /// A component that must be a directory is not one.
    case notADirectory(path: String)
    /// The path names a directory, a FIFO, a device or a socket, not a regular file.
    case notARegularFile(path: String)
    /// The file is not UTF-8 text.
    case notUTF8(path: String)
    /// More than ``WorkspaceResolver/maxSymbolicLinks`` symbolic links on the way.
    case tooManySymbolicLinks(path: String)
    /// A system call failed with `errno`.
    case system(path: String, operation: String, errno: Int32)
    /// The request took longer than `limit`; the agent is answered, the work is abandoned.
    case timedOut(path: String, limit: Duration)
    /// The work was abandoned (the bridge is stopping, or its answer was already given).
    case abandoned(path: String)
    /// The path is, or lies in, one of the bridge's own files or directories (`protected`: its state directory with
    /// the TLS key and pairing database, its config directory or file), which no file scope (`fs-scope`) reaches.
    case bridgeFile(path: String, protected: String)
    /// The directory a workspace was asked for does not exist or cannot be opened.
    case missingWorkspace(directory: String)
    /// The directory of a wider ``WorkspaceScope`` (the home directory) cannot be opened; `nil` when none is known.
    case missingScopeDirectory(scope: WorkspaceScope, directory: String?)

    /// A setting of the bridge that changes this answer (a key of its config file, in its `data.setting` on the wire).
    package enum Setting: String, Sendable {
        /// How far the agent's file requests reach (`fs-scope: workspace|home|any`).
        case fileScope = "fs-scope"
    }

    /// The setting whose change would let the request through, if one would: ``Setting/fileScope`` for a path outside
    /// the scope and a scope whose directory cannot be opened; `nil` for the others (the bridge's own files stay out
    /// of every scope).
    package var setting: Setting? {
        switch self {
        case .outside, .missingScopeDirectory: .fileScope
        default: nil
        }
    }

    /// The JSON-RPC error the agent is answered with.
    package var rpcError: JSONRPCError {
        switch self {
        case .containsNUL(let path):
            return .invalidParams("the path contains a NUL byte; remove it", data: ["path": .string(path)])
        case .tooLong(let path, let bytes, let limit):
            return .invalidParams(
                "the path is \(bytes) bytes long, more than the limit of \(limit)",
                data: ["bytes": .int(Int64(bytes)), "limit": .int(Int64(limit))]).with(path: path, shortened: true)
        case .tooManyComponents(let path, let count, let limit):
            return .invalidParams(
                "the path has \(count) components, more than the limit of \(limit)",
                data: ["components": .int(Int64(count)), "limit": .int(Int64(limit))]).with(path: path, shortened: true)
        case .parentComponent(let path):
            return .invalidParams(
                "\(path) could lead outside the session's working directory: paths with .. are not allowed", data: ["path": .string(path)])
        case .outside(let path, let root, let why):
            return .invalidParams(
                "\(path) is outside \(root), where this bridge serves files to the session (\(why)); the bridge's file scope "
                    + "sets how far that reaches, and its owner can widen it in the bridge's settings (file scope: home or any)",
                data: ["path": .string(path), "root": .string(root), "setting": .string(Setting.fileScope.rawValue)])
        case .notFound(let path):
            return JSONRPCError(code: ACPMethod.resourceNotFoundCode, message: "File not found: \(path)", data: ["path": .string(path)])
        case .danglingSymbolicLink(let path):
            return .invalidParams(
                "\(path) is a symbolic link to a file that does not exist; it is not followed (write to the target's own path)",
                data: ["path": .string(path)])
        case .notADirectory(let path):
            return .invalidParams("\(path): a component of it is not a directory", data: ["path": .string(path)])
        case .notARegularFile(let path):
            return .invalidParams("\(path) is not a regular file", data: ["path": .string(path)])
        case .notUTF8(let path):
            return .invalidParams("\(path) is not UTF-8 text", data: ["path": .string(path)])
        case .tooManySymbolicLinks(let path):
            return .invalidParams(
                "\(path): more than \(WorkspaceResolver.maxSymbolicLinks) symbolic links on the way",
                data: ["path": .string(path)])
        case .system(let path, let operation, let code):
            return .internalError(
                "could not \(operation) \(path): \(String(cString: strerror(code)))",
                data: ["path": .string(path), "errno": .int(Int64(code))])
        case .timedOut(let path, let limit):
            return .internalError(
                "\(path): the file request took longer than \(limit.words); try again, or a smaller file",
                data: ["path": .string(path)])
        case .abandoned(let path):
            return .internalError("\(path): the bridge is stopping", data: ["path": .string(path)])
        case .bridgeFile(let path, let protected):
            return .invalidParams(
                "\(path) is one of the bridge's own files (\(protected): its keys, pairing database or configuration), which "
                    + "the agent may neither read nor write, whatever the bridge's file scope",
                data: ["path": .string(path), "protected": .string(protected)])
        case .missingWorkspace(let directory):
            return .invalidParams("the directory \(directory) does not exist", data: ["path": .string(directory)])
        case .missingScopeDirectory(let scope, let directory):
            return .internalError(
                "the file scope '\(scope)' needs the directory \(directory ?? "(home directory unknown)"), which cannot be opened; "
                    + "set HOME to an existing directory, or the bridge's owner can choose another in its settings (file scope)",
                data: ["scope": .string(scope.rawValue), "setting": .string(Setting.fileScope.rawValue)])
        }
    }
}

extension JSONRPCError {
    /// Adds `path` to the error's data, cut to its first 256 bytes when `shortened` (an overlong path is not echoed whole).
    fileprivate func with(path: String, shortened: Bool) -> JSONRPCError {
        var members = data?.objectValue ?? [:]
        members["path"] = .string(shortened ? String(decoding: path.utf8.prefix(256), as: UTF8.self) : path)
        return JSONRPCError(code: code, message: message, data: .object(members))
    }
}
