import BridgeProcess
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A temporary directory, removed when the fixture goes.
final class ProcessFixture {
    let root: String

    init() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("oa-process-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        root = base.path
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    func path(_ relative: String) -> String { root + "/" + relative }
}

/// Starts `/bin/sh -c script` (supervised or not) with its output on a pipe; returns the process and the read end.
func startShell(_ script: String, supervised: Bool, directory: ChildProcess.Directory = .inherited) throws -> (ChildProcess, FileHandle) {
    let pipe = try ChildProcessPipe(for: "/bin/sh")
    defer { close(pipe.write) }
    do {
        let process = try ChildProcess.spawn(ChildProcess.Request(
            executable: "/bin/sh", arguments: ["-c", script], environment: ["PATH": "/usr/bin:/bin", "LC_ALL": "C"],
            directory: directory, output: pipe.write, error: pipe.write, supervised: supervised))
        return (process, FileHandle(fileDescriptor: pipe.read, closeOnDealloc: true))
    } catch {
        close(pipe.read)
        throw error
    }
}

/// Reads until `marker` has been seen (or the end); returns what was read.
func read(_ handle: FileHandle, until marker: String) -> String {
    var seen = ""
    while !seen.contains(marker) {
        let chunk = handle.availableData
        if chunk.isEmpty { break }
        seen += String(decoding: chunk, as: UTF8.self)
    }
    return seen
}
