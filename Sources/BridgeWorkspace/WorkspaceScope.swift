import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How far an agent's `fs/read_text_file` and `fs/write_text_file` may reach (`oa-bridge serve --fs-scope`).
///
/// Whatever the scope, paths are opened beneath a directory descriptor (see `WorkspaceFiles`): a symbolic link never
/// leads beyond the scope's directory, and paths with `..` are refused. A path outside the session's directories is
/// served only when it is absolute, as the ACP schema requires of every path.
public enum WorkspaceScope: String, Sendable, CaseIterable, CustomStringConvertible {
    /// The session's `cwd` and its `additionalDirectories` (the default).
    case workspace
    /// Also anything under the home directory of the user the bridge runs as.
    case home
    /// Any path the bridge's user may open.
    case any

    /// The directory a path outside the session's directories is resolved beneath: `nil` for ``workspace``, the home
    /// directory `home` (or, when `nil`, `HOME`, then the password database) for ``home``, `/` for ``any``.
    func root(home: String? = nil) -> String? {
        switch self {
        case .workspace: return nil
        case .home: return home ?? Self.userHome()
        case .any: return "/"
        }
    }

    /// `workspace`, `home` or `any`.
    public var description: String { rawValue }

    /// `HOME` when set to an absolute path, otherwise the user's entry in the password database.
    static func userHome() -> String? {
        if let home = ProcessInfo.processInfo.environment["HOME"], home.hasPrefix("/") { return home }
        guard let entry = getpwuid(getuid()), let directory = entry.pointee.pw_dir else { return nil }
        let home = String(cString: directory)
        return home.hasPrefix("/") ? home : nil
    }
}
