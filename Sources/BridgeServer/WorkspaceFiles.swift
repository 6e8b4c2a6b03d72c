import BridgeRPC

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Serves `fs/read_text_file` and `fs/write_text_file` inside one directory, confined by the kernel: every path is
/// opened relative to a descriptor of the directory held open for the session (see ``WorkspaceResolver``), never
/// checked by name and then opened again. Paths with NUL, `..`, more than PATH_MAX bytes or too many components are
/// refused before any system call (see ``WorkspacePath``). Symbolic links that stay inside work; links leading out,
/// and a dangling link where a file is written, are refused. The calls block: the hub runs them off its actor
/// (see ``WorkspaceIO``).
struct WorkspaceFiles: Sendable {
    /// The directory's real path (what the agent is told as the session's `cwd`).
    let root: String
    /// Opens paths beneath the directory.
    let resolver: WorkspaceResolver

    /// Files under `directory`, which must exist; `kernelConfinement` `false` skips `openat2(2)` (as on a kernel
    /// without it), for tests of the walk.
    init(root directory: String, kernelConfinement: Bool = true) throws(WorkspaceFileError) {
        guard let resolved = realpath(directory, nil) else { throw .missingWorkspace(directory: directory) }
        let real = String(cString: resolved)
        free(resolved)
        let fd = systemOpen(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw .missingWorkspace(directory: directory) }
        self.init(directory: WorkspaceDirectory(adopting: fd), root: real, kernelConfinement: kernelConfinement)
    }

    private init(directory: WorkspaceDirectory, root: String, kernelConfinement: Bool) {
        self.root = root
        self.resolver = WorkspaceResolver(directory: directory, rootPath: root, kernelConfinement: kernelConfinement)
    }

    /// The workspace of a session whose `cwd` is `path` (absolute under ``root``, or relative), an existing directory
    /// opened beneath this one.
    func subdirectory(_ path: String) throws(WorkspaceFileError) -> WorkspaceFiles {
        let checked = try WorkspacePath(path, root: root)
        let fd = try resolver.open(checked, as: .directory)
        let directory = WorkspaceDirectory(adopting: fd)
        return WorkspaceFiles(
            directory: directory, root: Self.path(of: fd) ?? Self.join(root, checked.relative),
            kernelConfinement: resolver.kernelConfinement)
    }

    /// ``subdirectory(_:)`` answering with the JSON-RPC error a client gets for a bad `cwd`.
    func session(cwd path: String) throws(JSONRPCError) -> WorkspaceFiles {
        do {
            return try subdirectory(path)
        } catch {
            throw error.rpcError
        }
    }

    /// Reads a text file, optionally from 1-based `line` for `limit` lines.
    func read(_ path: String, line: Int?, limit: Int?, isAbandoned: () -> Bool = { false }) throws(WorkspaceFileError) -> String {
        let checked = try WorkspacePath(path, root: root)
        let fd = try resolver.open(checked, as: .fileForReading, isAbandoned: isAbandoned)
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

    /// Writes a text file, creating missing directories inside the workspace.
    func write(_ path: String, content: String, isAbandoned: () -> Bool = { false }) throws(WorkspaceFileError) {
        let checked = try WorkspacePath(path, root: root)
        let fd = try resolver.open(checked, as: .fileForWriting, isAbandoned: isAbandoned)
        defer { close(fd) }
        try Self.requireRegularFile(fd, path)
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
