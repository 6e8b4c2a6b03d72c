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

/// Runs `/bin/sh -c script` through ``ConfinedProcess`` from `directory`; returns its exit and its output.
func runConfined(_ script: String, directory: Int32?, ruleset: LandlockRuleset?) async throws -> (ConfinedProcess.Exit, String) {
    var ends: [Int32] = [-1, -1]
    guard pipe(&ends) == 0 else { throw POSIXError(.EMFILE) }
    _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
    _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
    let process: ConfinedProcess
    do {
        process = try ConfinedProcess.spawn(ConfinedProcess.Request(
            executable: "/bin/sh", arguments: ["-c", script], environment: ["PATH": "/usr/bin:/bin", "LC_ALL": "C"],
            directory: directory, output: ends[1], ruleset: ruleset))
    } catch {
        close(ends[0])
        close(ends[1])
        throw error
    }
    close(ends[1])
    let handle = FileHandle(fileDescriptor: ends[0], closeOnDealloc: true)
    let data = handle.readDataToEndOfFile()
    let exit = await process.wait()
    return (exit, String(decoding: data, as: UTF8.self))
}
