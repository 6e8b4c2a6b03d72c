#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A path an agent asked for, checked as text before any system call: no NUL, at most ``maxBytes`` bytes and
/// ``maxComponents`` components, no `..`, and, when absolute, under the workspace's own path.
///
/// What it names is decided by the kernel, relative to the workspace's directory descriptor (see
/// ``WorkspaceResolver``).
struct WorkspacePath: Sendable, Equatable {
    /// The longest path accepted, in bytes (PATH_MAX).
    static let maxBytes = Int(PATH_MAX)
    /// The most components accepted.
    static let maxComponents = 256

    /// The path as the agent sent it (for messages).
    let original: String
    /// Its components relative to the workspace, without empty and `.` ones; empty for the workspace itself.
    let components: [String]

    /// Checks `path`, absolute (under `root`) or relative to the workspace whose real path is `root`.
    init(_ path: String, root: String) throws(WorkspaceFileError) {
        if path.utf8.contains(0) { throw .containsNUL(path: path) }
        let bytes = path.utf8.count
        guard bytes <= Self.maxBytes else { throw .tooLong(path: path, bytes: bytes, limit: Self.maxBytes) }
        var relative = Substring(path)
        if path.hasPrefix("/") {
            if root == "/" {
                relative = relative.dropFirst()
            } else if path == root {
                relative = ""
            } else if path.hasPrefix(root + "/") {
                relative = relative.dropFirst(root.utf8.count + 1)
            } else {
                throw .outside(path: path, root: root, why: "an absolute path must begin with \(root)/")
            }
        }
        let parts = relative.split(separator: "/", omittingEmptySubsequences: true).filter { $0 != "." }
        guard parts.count <= Self.maxComponents else {
            throw .tooManyComponents(path: path, count: parts.count, limit: Self.maxComponents)
        }
        if parts.contains("..") { throw .parentComponent(path: path) }
        self.original = path
        self.components = parts.map(String.init)
    }

    /// The components joined with `/`, or `.` for the workspace itself.
    var relative: String { components.isEmpty ? "." : components.joined(separator: "/") }
}
