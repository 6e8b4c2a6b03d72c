package import BridgeRPC
package import BridgeSandbox

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Serves `fs/read_text_file` and `fs/write_text_file` inside one directory, confined by the kernel: every path is
/// opened relative to a descriptor of the directory held open for the session (see ``WorkspaceResolver``), never
/// checked by name and then opened again.
///
/// Paths with NUL, `..`, more than PATH_MAX bytes or too many components are refused before any system call (see
/// ``WorkspacePath``). Symbolic links that stay inside work; links leading out, and a dangling link where a file is
/// written, are refused. The calls block: the hub runs them off its actor (see ``WorkspaceIO``).
///
/// Under a wider ``WorkspaceScope`` (`--fs-scope home` or `any`), an absolute path outside the directory, or one whose
/// symbolic links lead out of it, is opened again beneath the scope's directory (the home directory, or `/`), under
/// the same rules: nothing beyond the scope's directory is reached.
///
/// Whatever the scope, the bridge's own files (``protected``: its state and configuration) are never read or written
/// (see ``WorkspaceResolver``); a refusal is ``WorkspaceFileError/bridgeFile(path:protected:)``.
package struct WorkspaceFiles: Sendable {
    /// The directory's real path (what the agent is told as the session's `cwd`).
    package let root: String
    /// Opens paths beneath the directory.
    let resolver: WorkspaceResolver
    /// Opens paths beneath the scope's directory, for absolute paths outside ``root``; `nil` under
    /// ``WorkspaceScope/workspace``.
    let scopeResolver: WorkspaceResolver?
    /// The bridge's own files, never opened for the agent.
    package var protected: ProtectedFiles { resolver.protected }
    /// The directory's descriptor (valid while this value lives), for a terminal started in it.
    package var descriptor: Int32 { resolver.directory.descriptor }

    /// What a terminal of a session working here (with `additional` directories) may reach: this directory, the
    /// additional ones and the scope's directory read and written, the system's read, never ``protected``.
    ///
    /// The descriptors are this value's and `additional`'s: they live as long as those.
    package func terminalPolicy(additional: [WorkspaceFiles]) -> SandboxPolicy {
        var writable = ([self] + additional).map { SandboxPolicy.Root.descriptor($0.descriptor, name: $0.root) }
        if let scopeResolver {
            writable.append(.descriptor(scopeResolver.directory.descriptor, name: scopeResolver.rootPath))
        }
        return .terminal(writable: writable, protected: protected)
    }

    /// Files under `directory`, which must exist; `kernelConfinement` `false` skips `openat2(2)` (as on a kernel
    /// without it), for tests of the walk.
    ///
    /// `scope` widens what absolute paths may reach; `home` replaces the user's home directory for
    /// ``WorkspaceScope/home`` (tests). `protected` are the bridge's own files, refused whatever the scope.
    /// - Throws: ``WorkspaceFileError/missingWorkspace(directory:)`` when `directory` cannot be opened,
    ///   ``WorkspaceFileError/missingScopeDirectory(scope:directory:)`` when the scope's directory cannot.
    package init(
        root directory: String, scope: WorkspaceScope = .workspace, home: String? = nil, kernelConfinement: Bool = true,
        protected: ProtectedFiles = .none
    ) throws(WorkspaceFileError) {
        guard let (real, fd) = Self.openDirectory(directory) else { throw .missingWorkspace(directory: directory) }
        var scopeResolver: WorkspaceResolver?
        if let scopeRoot = scope.root(home: home) {
            guard let (realScope, scopeFD) = Self.openDirectory(scopeRoot) else {
                close(fd)
                throw .missingScopeDirectory(scope: scope, directory: scopeRoot)
            }
            scopeResolver = WorkspaceResolver(
                directory: WorkspaceDirectory(adopting: scopeFD), rootPath: realScope, kernelConfinement: kernelConfinement,
                protected: protected)
        }
        self.init(
            directory: WorkspaceDirectory(adopting: fd), root: real, kernelConfinement: kernelConfinement, scope: scopeResolver,
            protected: protected)
    }

    private init(directory: WorkspaceDirectory, root: String, kernelConfinement: Bool, scope: WorkspaceResolver?, protected: ProtectedFiles) {
        self.root = root
        self.resolver = WorkspaceResolver(directory: directory, rootPath: root, kernelConfinement: kernelConfinement, protected: protected)
        self.scopeResolver = scope
    }

    /// The workspace of a session whose `cwd` is `path` (absolute under ``root``, or relative), an existing directory
    /// opened beneath this one.
    ///
    /// It keeps this workspace's scope.
    func subdirectory(_ path: String) throws(WorkspaceFileError) -> WorkspaceFiles {
        let checked = try WorkspacePath(path, root: root)
        let fd = try resolver.open(checked, as: .directory)
        return adopting(fd, path: Self.join(root, checked.relative))
    }

    /// An existing directory at `path` within reach of this workspace's scope: beneath ``root`` (absolute, or
    /// relative to it), or, under a wider scope, an absolute path beneath the scope's directory.
    ///
    /// Opened without any symbolic link leading beyond the directory it is resolved beneath; the result keeps this
    /// scope. For a terminal's working directory: the descriptor is ``WorkspaceResolver/directory`` of its
    /// ``resolver``, its real path ``root``.
    package func directory(_ path: String) throws(WorkspaceFileError) -> WorkspaceFiles {
        let fd = try open(path, as: .directory)
        return adopting(fd, path: path)
    }

    /// The workspace among a session's `cwd` (`files`) and its `additionalDirectories` that serves `path`: the
    /// additional directory holding it, otherwise `files` (which refuses it, or serves it under a wider scope).
    package static func serving(_ path: String, files: WorkspaceFiles, additional: [WorkspaceFiles]) -> WorkspaceFiles {
        additional.first { path == $0.root || path.hasPrefix($0.root == "/" ? "/" : $0.root + "/") } ?? files
    }

    /// Opens `path` as `target` beneath ``root``; an absolute path that is outside it, or leads out of it, is opened
    /// beneath the scope's directory instead when there is one.
    ///
    /// The caller closes the descriptor.
    func open(
        _ path: String, as target: WorkspaceResolver.Target, isAbandoned: () -> Bool = { false }
    ) throws(WorkspaceFileError) -> Int32 {
        do {
            return try resolver.open(try WorkspacePath(path, root: root), as: target, isAbandoned: isAbandoned)
        } catch .outside(let refused, let inner, let why) {
            guard let scopeResolver, path.hasPrefix("/") else { throw .outside(path: refused, root: inner, why: why) }
            let checked = try WorkspacePath(path, root: scopeResolver.rootPath)
            return try scopeResolver.open(checked, as: target, isAbandoned: isAbandoned)
        }
    }

    private func adopting(_ fd: Int32, path: String) -> WorkspaceFiles {
        WorkspaceFiles(
            directory: WorkspaceDirectory(adopting: fd), root: Self.path(of: fd) ?? path,
            kernelConfinement: resolver.kernelConfinement, scope: scopeResolver, protected: resolver.protected)
    }

    /// The real path of `directory` and a descriptor of it (`O_DIRECTORY`), or `nil` when it cannot be opened.
    private static func openDirectory(_ directory: String) -> (String, Int32)? {
        guard let resolved = realpath(directory, nil) else { return nil }
        let real = String(cString: resolved)
        free(resolved)
        let fd = systemOpen(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        return fd >= 0 ? (real, fd) : nil
    }

    /// ``subdirectory(_:)`` answering with the JSON-RPC error a client gets for a bad `cwd`.
    package func session(cwd path: String) throws(JSONRPCError) -> WorkspaceFiles {
        do {
            return try subdirectory(path)
        } catch {
            throw error.rpcError
        }
    }

    /// Reads a text file, optionally from 1-based `line` for `limit` lines.
    package func read(_ path: String, line: Int?, limit: Int?, isAbandoned: () -> Bool = { false }) throws(WorkspaceFileError) -> String {
        let fd = try open(path, as: .fileForReading, isAbandoned: isAbandoned)
        defer { close(fd) }
        try Self.requireRegularFile(fd, path)
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            if isAbandoned() { throw .abandoned(path: path) }
            let count = chunk.withUnsafeMutableBytes { systemRead(fd, $0.baseAddress, $0.count) }
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                throw .system(path: path, operation: "read", errno: errno)
            }
            bytes.append(contentsOf: chunk[0..<count])
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .notUTF8(path: path) }
        guard line != nil || limit != nil else { return text }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let start = max((line ?? 1) - 1, 0)
        guard start < lines.count else { return "" }
        let end = limit.map { min(start + max($0, 0), lines.count) } ?? lines.count
        return lines[start..<end].joined(separator: "\n")
    }

    /// Writes a text file, creating missing directories inside the workspace (or the scope's directory).
    package func write(_ path: String, content: String, isAbandoned: () -> Bool = { false }) throws(WorkspaceFileError) {
        let fd = try open(path, as: .fileForWriting, isAbandoned: isAbandoned)
        defer { close(fd) }
        try Self.requireRegularFile(fd, path)
        // Opened without O_TRUNC: only now is it known to be no file of the bridge's own.
        guard ftruncate(fd, 0) == 0 else { throw .system(path: path, operation: "truncate", errno: errno) }
        var bytes = Array(content.utf8)[...]
        while !bytes.isEmpty {
            if isAbandoned() { throw .abandoned(path: path) }
            let count = bytes.withUnsafeBytes { systemWrite(fd, $0.baseAddress, min($0.count, 1 << 20)) }
            if count < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw .system(path: path, operation: "write", errno: errno)
            }
            bytes = bytes.dropFirst(count)
        }
    }

    private static func requireRegularFile(_ fd: Int32, _ path: String) throws(WorkspaceFileError) {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .system(path: path, operation: "inspect", errno: errno) }
        guard info.st_mode & 0o170000 == 0o100000 else { throw .notARegularFile(path: path) }
    }

    /// The path the kernel has for an open descriptor (Linux), or `nil`.
    private static func path(of fd: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: WorkspacePath.maxBytes + 1)
        let count = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count)
        guard count > 0, count <= WorkspacePath.maxBytes, buffer[0] == CChar(UInt8(ascii: "/")) else { return nil }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func join(_ root: String, _ relative: String) -> String {
        relative == "." ? root : (root == "/" ? "/" : root + "/") + relative
    }
}

// The C calls under names the type's own `read` and `write` do not hide.
private func systemOpen(_ path: String, _ flags: Int32) -> Int32 { open(path, flags) }
private func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int { read(fd, buffer, count) }
private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int { write(fd, buffer, count) }
