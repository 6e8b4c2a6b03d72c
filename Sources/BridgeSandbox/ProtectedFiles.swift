import CSandbox

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The bridge's own files (its state directory with the TLS key and pairing database, its configuration directory
/// and the config file it was started with), which no agent request and no terminal may read or write, whatever the
/// `--fs-scope`.
///
/// Each is known by its ``FileIdentity`` (device and inode), taken when the bridge starts, so that no spelling of its
/// path (symbolic links, `..`, another hard link to a file) gets around it. A directory that does not exist yet is
/// created (mode 0700) so that it can be pinned: the agent cannot then make one in its place. A directory is held
/// open, so the directories above it are found again (through `..`) even after a rename.
public final class ProtectedFiles: Sendable {
    /// One protected file or directory.
    struct Entry: Sendable {
        let path: String
        let identity: FileIdentity
        /// The directory itself, or a file's parent directory (`O_PATH`, held open): where the walk up starts.
        let anchor: Int32
    }

    let entries: [Entry]

    /// Nothing protected (tests, and library users without state).
    public static let none = ProtectedFiles(entries: [])

    private init(entries: [Entry]) {
        self.entries = entries
    }

    /// Protects `directories` (created with mode 0700 when missing, parents too) and the existing `files`.
    /// - Throws: ``SandboxError/unprotectable(path:errno:)`` when one cannot be created or opened.
    public convenience init(directories: [String], files: [String]) throws(SandboxError) {
        var entries: [Entry] = []
        for path in directories {
            try Self.makeDirectories(path)
            let fd = open(path, oPath | O_DIRECTORY | O_CLOEXEC)
            guard fd >= 0 else { throw .unprotectable(path: path, errno: errno) }
            guard let identity = FileIdentity(descriptor: fd) else {
                close(fd)
                throw .unprotectable(path: path, errno: errno)
            }
            entries.append(Entry(path: path, identity: identity, anchor: fd))
        }
        for path in files {
            let file = open(path, oPath | O_CLOEXEC)
            guard file >= 0 else { throw .unprotectable(path: path, errno: errno) }
            let identity = FileIdentity(descriptor: file)
            close(file)
            guard let identity else { throw .unprotectable(path: path, errno: errno) }
            if identity.isDirectory {
                entries.append(Entry(path: path, identity: identity, anchor: open(path, oPath | O_DIRECTORY | O_CLOEXEC)))
                continue
            }
            let parent = Self.parent(of: path)
            let anchor = open(parent, oPath | O_DIRECTORY | O_CLOEXEC)
            guard anchor >= 0 else { throw .unprotectable(path: parent, errno: errno) }
            entries.append(Entry(path: path, identity: identity, anchor: anchor))
        }
        self.init(entries: entries)
    }

    deinit {
        for entry in entries where entry.anchor >= 0 { close(entry.anchor) }
    }

    /// The protected paths as given (for messages and logs).
    public var paths: [String] { entries.map(\.path) }

    /// Whether nothing is protected.
    public var isEmpty: Bool { entries.isEmpty }

    /// The protected file or directory `identity` is, if it is one.
    public func protected(_ identity: FileIdentity) -> String? {
        entries.first { $0.identity == identity }?.path
    }

    /// The protected file or directory open at `descriptor`, if it is one.
    public func protected(descriptor: Int32) -> String? {
        FileIdentity(descriptor: descriptor).flatMap(protected)
    }

    /// Every directory above a protected file or directory, up to `/`, found now through `..` from each (so a
    /// directory renamed since the start is still found).
    ///
    /// A directory in this set holds something protected beneath it.
    public func ancestors() -> Set<FileIdentity> {
        var found: Set<FileIdentity> = []
        for entry in entries where entry.anchor >= 0 {
            var current = entry.identity.isDirectory ? openat(entry.anchor, "..", oPath | O_DIRECTORY | O_CLOEXEC) : dup(entry.anchor)
            while current >= 0 {
                // At `/` the parent is itself: the insert fails on the next turn.
                guard let identity = FileIdentity(descriptor: current), found.insert(identity).inserted else { break }
                let up = openat(current, "..", oPath | O_DIRECTORY | O_CLOEXEC)
                close(current)
                current = up
            }
            if current >= 0 { close(current) }
        }
        return found
    }

    /// The protected directory the directory open at `descriptor` is, or lies beneath (walking `..` up to `/`).
    public func enclosing(directory descriptor: Int32) -> String? {
        let targets = Dictionary(entries.filter(\.identity.isDirectory).map { ($0.identity, $0.path) }, uniquingKeysWith: { a, _ in a })
        guard !targets.isEmpty else { return nil }
        var current = dup(descriptor)
        var seen: Set<FileIdentity> = []
        while current >= 0 {
            guard let identity = FileIdentity(descriptor: current), seen.insert(identity).inserted else { break }
            if let path = targets[identity] {
                close(current)
                return path
            }
            let up = openat(current, "..", oPath | O_DIRECTORY | O_CLOEXEC)
            close(current)
            current = up
        }
        if current >= 0 { close(current) }
        return nil
    }

    private static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// `mkdir -p` with mode 0700 for the ones made.
    private static func makeDirectories(_ path: String) throws(SandboxError) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST { throw .unprotectable(path: prefix, errno: errno) }
        }
    }
}
