import BridgeSandbox
import CWorkspaceFS

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Opens paths beneath a workspace's directory descriptor so that nothing outside it can be reached, whatever the
/// agent does to the tree meanwhile: no check of a name followed by a second open of the same name.
///
/// First `openat2(2)` with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS` (the kernel refuses `..`, absolute paths and
/// symbolic links that leave). Where it is missing (`ENOSYS`), where it refuses a link that may still stay inside
/// (an absolute link to a path under the workspace), and to create missing directories, a walk takes over: one
/// component at a time with `openat(O_NOFOLLOW | O_DIRECTORY)` from the directory reached so far; a symbolic link
/// is read and its target walked the same way, `..` goes back up the walk's own stack of descriptors (never above
/// the workspace) and an absolute target must lie under the workspace's path. Missing directories are made with
/// `mkdirat` under the same rule; the file itself is opened with `O_NOFOLLOW`, and a link in its place is followed
/// only to an existing file (a dangling link is refused, never followed).
///
/// The bridge's own files (``protected``) are never opened for the agent, whatever the spelling: the file or
/// directory reached is compared by device and inode with them, and when one of the protected directories lies beneath
/// this directory the walk is taken (not `openat2(2)`) and every directory it enters is compared too, so nothing is
/// opened or created inside them. A file is opened for writing without `O_TRUNC` (the caller truncates it once it is
/// known not to be protected).
struct WorkspaceResolver: Sendable {
    /// Symbolic links followed for one path at most (as the kernel's own limit).
    static let maxSymbolicLinks = 40
    /// Steps of one walk at most (components, links and retries after a concurrent change).
    static let maxSteps = 10_000

    /// What the path names.
    enum Target: Sendable {
        /// An existing directory, opened `O_RDONLY | O_DIRECTORY`.
        case directory
        /// An existing file, opened `O_RDONLY | O_NONBLOCK` (a FIFO does not block the open).
        case fileForReading
        /// A file opened `O_WRONLY` (not truncated: see the type's documentation), created with missing parent
        /// directories.
        case fileForWriting
    }

    /// The workspace's directory.
    let directory: WorkspaceDirectory
    /// The workspace's real path (absolute symbolic links must lie under it).
    let rootPath: String
    /// Whether to try `openat2(2)` first; `false` walks at once (as on a kernel without it).
    let kernelConfinement: Bool
    /// The bridge's own files, never opened.
    var protected: ProtectedFiles = .none

    /// Opens `path` as `target`; the caller closes the descriptor.
    ///
    /// `isAbandoned` is asked at every step.
    func open(_ path: WorkspacePath, as target: Target, isAbandoned: () -> Bool = { false }) throws(WorkspaceFileError) -> Int32 {
        var mayUseKernel = kernelConfinement
        if !protected.isEmpty {
            if let enclosing = protected.enclosing(directory: directory.descriptor) {
                throw .bridgeFile(path: path.original, protected: enclosing)
            }
            // Something protected beneath: walk, checking each directory entered.
            if let identity = FileIdentity(descriptor: directory.descriptor), protected.ancestors().contains(identity) { mayUseKernel = false }
        }
        let fd = try open(path, as: target, kernel: mayUseKernel, isAbandoned: isAbandoned)
        if let found = protected.protected(descriptor: fd) ?? (target == .directory ? protected.enclosing(directory: fd) : nil) {
            close(fd)
            throw .bridgeFile(path: path.original, protected: found)
        }
        return fd
    }

    private func open(_ path: WorkspacePath, as target: Target, kernel: Bool, isAbandoned: () -> Bool) throws(WorkspaceFileError) -> Int32 {
        if kernel {
            let flags = flags(for: target, creating: true)
            // openat2 refuses a mode without O_CREAT (EINVAL).
            let mode: UInt64 = flags & O_CREAT != 0 ? 0o666 : 0
            let fd = cwfs_openat2(directory.descriptor, path.relative, UInt64(UInt32(bitPattern: flags)), mode, cwfs_resolve_beneath)
            if fd >= 0 { return fd }
            let code = errno
            switch code {
            case ENOENT where target != .fileForWriting:
                throw .notFound(path: path.original)
            case ENOSYS, EXDEV, ELOOP, ENOENT, ENOTDIR, EAGAIN, EINTR:
                break  // the walk decides (and says why)
            case EISDIR, ENXIO:
                throw .notARegularFile(path: path.original)
            default:
                throw .system(path: path.original, operation: "open", errno: code)
            }
        }
        return try walk(path, to: target, isAbandoned: isAbandoned)
    }

    /// `open(2)` flags for the final component.
    private func flags(for target: Target, creating: Bool) -> Int32 {
        switch target {
        case .directory: return O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW
        case .fileForReading: return O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | O_NOFOLLOW
        case .fileForWriting: return O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | O_NOFOLLOW | (creating ? O_CREAT : 0)
        }
    }

    /// The component-by-component walk (see the type's documentation).
    func walk(_ path: WorkspacePath, to target: Target, isAbandoned: () -> Bool = { false }) throws(WorkspaceFileError) -> Int32 {
        var walk = Walk(resolver: self, path: path)
        defer { walk.closeAll() }
        return try walk.run(to: target, isAbandoned: isAbandoned)
    }

    /// What a name in a directory is, as the walk sees it after an open refused it.
    private enum Entry {
        case symbolicLink(String)
        case directory
        case missing
        case other
    }

    /// The state of one walk: the descriptors opened so far (the last is where the walk is) and what is left.
    private struct Walk {
        let resolver: WorkspaceResolver
        let path: WorkspacePath
        /// Directories below the workspace opened so far; empty means the workspace itself.
        var stack: [Int32] = []
        /// Components still to walk, the next one last.
        var pending: [String]
        var links = 0
        var steps = 0
        /// Whether the file and missing directories may be created: not once a symbolic link in the file's place was
        /// followed (a dangling link makes nothing).
        var mayCreate = true

        init(resolver: WorkspaceResolver, path: WorkspacePath) {
            self.resolver = resolver
            self.path = path
            self.pending = path.components.reversed()
        }

        var current: Int32 { stack.last ?? resolver.directory.descriptor }

        mutating func closeAll() {
            for fd in stack { close(fd) }
            stack.removeAll()
        }

        mutating func run(to target: Target, isAbandoned: () -> Bool) throws(WorkspaceFileError) -> Int32 {
            while let name = pending.popLast() {
                steps += 1
                guard steps <= WorkspaceResolver.maxSteps else { throw .tooManySymbolicLinks(path: path.original) }
                if isAbandoned() { throw .abandoned(path: path.original) }
                if name.isEmpty || name == "." { continue }
                if name == ".." {
                    guard let fd = stack.popLast() else {
                        throw .outside(path: path.original, root: resolver.rootPath, why: "a symbolic link on it leads above it")
                    }
                    close(fd)
                    continue
                }
                if pending.isEmpty && target != .directory {
                    if let fd = try openFile(name, target) { return fd }
                } else {
                    try enterDirectory(name, creating: target == .fileForWriting && mayCreate)
                }
            }
            // Every component walked: the workspace itself, or a directory the last component (or a link) led to.
            guard target == .directory else { throw .notARegularFile(path: path.original) }
            if let fd = stack.popLast() { return fd }
            let fd = openat(resolver.directory.descriptor, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard fd >= 0 else { throw .system(path: path.original, operation: "open", errno: errno) }
            return fd
        }

        /// Opens the file `name` in the current directory, or, if it is a symbolic link, queues its target and
        /// returns `nil`.
        mutating func openFile(_ name: String, _ target: Target) throws(WorkspaceFileError) -> Int32? {
            let fd = openat(current, name, resolver.flags(for: target, creating: mayCreate), mode_t(0o666))
            if fd >= 0 { return fd }
            let code = errno
            switch code {
            case ELOOP:
                guard case .symbolicLink(let link) = try entry(name) else {
                    pending.append(name)  // changed meanwhile: look again
                    return nil
                }
                mayCreate = false
                try follow(link)
                return nil
            case ENOENT:
                throw mayCreate ? .notFound(path: path.original) : .danglingSymbolicLink(path: path.original)
            case ENOTDIR:
                throw .notADirectory(path: path.original)
            case EISDIR, ENXIO:
                throw .notARegularFile(path: path.original)
            default:
                throw .system(path: path.original, operation: "open", errno: code)
            }
        }

        /// Moves into the directory `name`, following a symbolic link in its place under the same rule, and making it
        /// first if it is missing and `creating`.
        mutating func enterDirectory(_ name: String, creating: Bool) throws(WorkspaceFileError) {
            let fd = openat(current, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
            if fd >= 0 {
                stack.append(fd)
                if let protected = resolver.protected.protected(descriptor: fd) {
                    throw .bridgeFile(path: path.original, protected: protected)
                }
                return
            }
            let code = errno
            switch code {
            case ELOOP, ENOTDIR:
                switch try entry(name) {
                case .symbolicLink(let link): try follow(link)
                case .directory, .missing: pending.append(name)  // changed meanwhile: look again
                case .other: throw .notADirectory(path: path.original)
                }
            case ENOENT where creating:
                if mkdirat(current, name, mode_t(0o777)) != 0 && errno != EEXIST {
                    throw .system(path: path.original, operation: "create a directory of", errno: errno)
                }
                pending.append(name)  // now open what was made (or what someone else made), under the same rule
            case ENOENT:
                throw mayCreate ? .notFound(path: path.original) : .danglingSymbolicLink(path: path.original)
            default:
                throw .system(path: path.original, operation: "open", errno: code)
            }
        }

        /// What `name` in the current directory is right now (with a symbolic link's target).
        func entry(_ name: String) throws(WorkspaceFileError) -> Entry {
            var info = stat()
            guard fstatat(current, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
                let code = errno
                if code == ENOENT { return .missing }
                throw .system(path: path.original, operation: "inspect", errno: code)
            }
            switch info.st_mode & 0o170000 {
            case 0o040000: return .directory
            case 0o120000: break
            default: return .other
            }
            var buffer = [CChar](repeating: 0, count: WorkspacePath.maxBytes + 1)
            let count = readlinkat(current, name, &buffer, buffer.count)
            guard count >= 0 else {
                let code = errno
                if code == EINVAL || code == ENOENT { return .missing }  // replaced meanwhile: the caller looks again
                throw .system(path: path.original, operation: "read a symbolic link on", errno: code)
            }
            guard count <= WorkspacePath.maxBytes else {
                throw .tooLong(path: path.original, bytes: count, limit: WorkspacePath.maxBytes)
            }
            return .symbolicLink(String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }

        /// Queues a link's target: relative to the current directory, or, when absolute, to the workspace (it must lie
        /// under the workspace's path).
        mutating func follow(_ link: String) throws(WorkspaceFileError) {
            links += 1
            guard links <= WorkspaceResolver.maxSymbolicLinks else { throw .tooManySymbolicLinks(path: path.original) }
            var relative = Substring(link)
            if link.hasPrefix("/") {
                let root = resolver.rootPath
                if root == "/" {
                    relative = relative.dropFirst()
                } else if link == root {
                    relative = ""
                } else if link.hasPrefix(root + "/") {
                    relative = relative.dropFirst(root.utf8.count + 1)
                } else {
                    throw .outside(path: path.original, root: root, why: "a symbolic link on it leads to \(link)")
                }
                closeAll()
            }
            let parts = relative.split(separator: "/", omittingEmptySubsequences: true)
            pending.append(contentsOf: parts.reversed().map(String.init))
            guard pending.count <= WorkspaceResolver.maxSteps else { throw .tooManySymbolicLinks(path: path.original) }
        }
    }
}
