import BridgeProcess
import BridgeSandbox
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A temporary directory tree for a test, removed at the end.
final class SandboxFixture {
    let root: String

    init() throws {
        let template = FileManager.default.temporaryDirectory.appendingPathComponent("sandbox-test-XXXXXX").path
        var bytes = Array(template.utf8CString)
        guard mkdtemp(&bytes) != nil else { throw POSIXError(.EIO) }
        let made = String(cString: bytes)
        root = (try? FileManager.default.destinationOfSymbolicLink(atPath: made)) ?? realPath(made)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: root)
    }

    /// `root/relative`.
    func path(_ relative: String) -> String { root + "/" + relative }

    func makeDirectory(_ relative: String) throws {
        try FileManager.default.createDirectory(atPath: path(relative), withIntermediateDirectories: true)
    }

    func write(_ relative: String, _ text: String) throws {
        try text.write(toFile: path(relative), atomically: false, encoding: .utf8)
    }

    func read(_ relative: String) -> String? {
        try? String(contentsOfFile: path(relative), encoding: .utf8)
    }

    /// Opens a directory (`O_RDONLY | O_DIRECTORY`); the caller closes it.
    func openDirectory(_ relative: String) throws -> Int32 {
        let fd = open(path(relative), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw POSIXError(.ENOENT) }
        return fd
    }
}

func realPath(_ path: String) -> String {
    guard let resolved = realpath(path, nil) else { return path }
    defer { free(resolved) }
    return String(cString: resolved)
}

/// Runs `/bin/sh -c script` as a supervised ``ChildProcess`` under `ruleset` from `directory`; returns its exit and
/// its output.
func runConfined(_ script: String, directory: Int32?, ruleset: LandlockRuleset?) async throws -> (ChildProcess.Exit, String) {
    let pipe = try ChildProcessPipe(for: "/bin/sh")
    let process: ChildProcess
    do {
        defer { close(pipe.write) }
        process = try ChildProcess.spawn(ChildProcess.Request(
            executable: "/bin/sh", arguments: ["-c", script], environment: ["PATH": "/usr/bin:/bin", "LC_ALL": "C"],
            directory: directory.map { .descriptor($0) } ?? .inherited, output: pipe.write, error: pipe.write,
            confinement: ruleset, supervised: true))
    } catch {
        close(pipe.read)
        throw error
    }
    let handle = FileHandle(fileDescriptor: pipe.read, closeOnDealloc: true)
    let data = handle.readDataToEndOfFile()
    let exit = await process.wait()
    return (exit, String(decoding: data, as: UTF8.self))
}
