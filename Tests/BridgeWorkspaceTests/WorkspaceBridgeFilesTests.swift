import BridgeSandbox
import Foundation
import Testing

@testable import BridgeWorkspace

/// The bridge's own files are out of every `--fs-scope` (issue 27, item 2), whatever the path's spelling, for reads
/// and writes, with `openat2(2)` and with the walk.
@Suite("WorkspaceFiles: the bridge's own files", .tags(.unit))
struct WorkspaceBridgeFilesTests {
    /// `home/` with the state directory `home/.local/state/oa-bridge` (a key in it), the workspace `home/ws` holding
    /// an explicit config file, and `home/notes.txt`.
    private func layout(kernel: Bool) throws -> (home: String, files: WorkspaceFiles) {
        let home = try TestDirectory.make()
        let state = home + "/.local/state/oa-bridge"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: home + "/ws", withIntermediateDirectories: true)
        try "KEY".write(toFile: state + "/tls-key.pem", atomically: false, encoding: .utf8)
        try "auth: token\n".write(toFile: home + "/ws/bridge.yaml", atomically: false, encoding: .utf8)
        try "notes".write(toFile: home + "/notes.txt", atomically: false, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: home + "/state-link", withDestinationPath: state)
        let protected = try ProtectedFiles(directories: [state], files: [home + "/ws/bridge.yaml"])
        let files = try WorkspaceFiles(root: home + "/ws", scope: .home, home: home, kernelConfinement: kernel, protected: protected)
        return (realPath(home), files)
    }

    private func realPath(_ path: String) -> String {
        (try? URL(fileURLWithPath: path).resolvingSymlinksInPath().path) ?? path
    }

    private func refusedAsBridgeFile(_ body: () throws -> Void) -> Bool {
        do {
            try body()
            return false
        } catch {
            if case .bridgeFile? = error as? WorkspaceFileError { return true }
            return false
        }
    }

    @Test("the key, the state directory and the config file are refused for reads and writes, however spelled", arguments: [true, false])
    func refusesTheBridgesFiles(kernel: Bool) throws {
        let (home, files) = try layout(kernel: kernel)
        let key = home + "/.local/state/oa-bridge/tls-key.pem"
        for path in [key, home + "/state-link/tls-key.pem", home + "//.local/./state/oa-bridge/tls-key.pem", home + "/ws/bridge.yaml", "bridge.yaml"] {
            #expect(refusedAsBridgeFile { _ = try files.read(path, line: nil, limit: nil) }, "read \(path)")
            #expect(refusedAsBridgeFile { try files.write(path, content: "x") }, "write \(path)")
        }
        #expect(refusedAsBridgeFile { try files.write(home + "/.local/state/oa-bridge/pairing.sqlite-journal", content: "x") })
        #expect(refusedAsBridgeFile { try files.write(home + "/state-link/sub/new.txt", content: "x") })
        #expect(try String(contentsOfFile: key, encoding: .utf8) == "KEY")
        #expect(try String(contentsOfFile: home + "/ws/bridge.yaml", encoding: .utf8) == "auth: token\n")
        #expect(!FileManager.default.fileExists(atPath: home + "/.local/state/oa-bridge/pairing.sqlite-journal"))
        #expect(!FileManager.default.fileExists(atPath: home + "/.local/state/oa-bridge/sub"))
        #expect(refusedAsBridgeFile { _ = try files.directory(home + "/.local/state/oa-bridge") })
        #expect(refusedAsBridgeFile { _ = try files.error(home + "/state-link") })
    }

    @Test("other files of the home directory and the workspace are still read and written", arguments: [true, false])
    func servesTheRest(kernel: Bool) throws {
        let (home, files) = try layout(kernel: kernel)
        #expect(try files.read(home + "/notes.txt", line: nil, limit: nil) == "notes")
        try files.write(home + "/.local/state/other.txt", content: "beside the state directory")
        try files.write("src/main.c", content: "int main;")
        try files.write(home + "/notes.txt", content: "new")
        #expect(try files.read(home + "/notes.txt", line: nil, limit: nil) == "new")
        #expect(try files.read(home + "/ws/src/main.c", line: nil, limit: nil) == "int main;")
    }
}

extension WorkspaceFiles {
    /// ``directory(_:)`` for a test that only wants its error.
    fileprivate func error(_ path: String) throws(WorkspaceFileError) {
        _ = try directory(path)
    }
}
