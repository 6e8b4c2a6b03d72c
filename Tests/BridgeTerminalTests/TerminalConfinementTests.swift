import BridgeSandbox
import BridgeTestKit
import Foundation
import Logging
import Testing
@testable import BridgeTerminal

/// Terminals confined for real (issue 27, item 3): started from the directory's descriptor, under Landlock.
@Suite("Terminal confinement", .timeLimit(.minutes(1)), .tags(.externalTool))
struct TerminalConfinementTests {
    /// Runs `command` through a host in the directory open at `directory` under `policy`; returns its output.
    private func run(_ command: String, directory: Int32, path: String, policy: SandboxPolicy) async throws -> String {
        let host = TerminalHost(settings: TerminalSettings(), clock: ContinuousClock(), logger: Logger(label: "test.terminal"))
        let updates = ObservedList<TerminalUpdate>()
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await host.run { update in updates.append(update) } }
            defer { host.close() }
            let terminal = try host.create(
                session: "s", generation: 1, command: command, args: [], environment: [], directory: directory, directoryPath: path,
                policy: policy, outputByteLimit: nil)
            // The exit goes to the phones once the output is read: the output is whole then.
            try #require(await updates.wait { $0.contains { $0.terminalID == terminal.id && $0.exitStatus != nil } }, "no exit status")
            return terminal.snapshot.output
        }
    }

    @Test("a command writes its directory and TMPDIR, reads the system, and reaches nothing outside nor the bridge's files")
    func confined() async throws {
        let root = NSTemporaryDirectory() + "oa-bridge-confine-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: root) }
        for directory in ["work/.state", "work/src", "outside"] {
            try FileManager.default.createDirectory(atPath: root + "/" + directory, withIntermediateDirectories: true)
        }
        try "SECRET".write(toFile: root + "/outside/secret", atomically: false, encoding: .utf8)
        try "KEY".write(toFile: root + "/work/.state/key", atomically: false, encoding: .utf8)
        let protected = try ProtectedFiles(directories: [root + "/work/.state"], files: [])
        let work = open(root + "/work", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { close(work) }
        let policy = SandboxPolicy.terminal(writable: [.descriptor(work, name: root + "/work")], protected: protected)
        let output = try await run(
            "mkdir -p src/deep && echo x > src/deep/a && echo write-ok; echo t > \"$TMPDIR/t\" && echo tmp-ok; ls /usr >/dev/null && echo usr-ok; "
                + "cat ../outside/secret; echo y > ../outside/planted; cat .state/key; echo z > .state/new; true",
            directory: work, path: root + "/work", policy: policy)
        #expect(output.contains("write-ok") && output.contains("tmp-ok") && output.contains("usr-ok"), "\(output)")
        #expect(!output.contains("SECRET") && !output.contains("KEY"), "\(output)")
        #expect(!FileManager.default.fileExists(atPath: root + "/outside/planted"))
        #expect(!FileManager.default.fileExists(atPath: root + "/work/.state/new"))
        #expect(FileManager.default.fileExists(atPath: root + "/work/src/deep/a"))
    }
}
