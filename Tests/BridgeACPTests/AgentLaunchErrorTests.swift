import BridgeACP
import BridgeProcess
import BridgeRPC
import Foundation
import Logging
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A launch failure keeps its cause: the program, the step and the errno reach the message the user sees (issue 31
/// item 5).
///
/// Foundation's `Process` said "The file doesn't exist." of an agent whose `#!` interpreter was missing.
@Suite("The agent's launch errors", .tags(.externalTool))
struct AgentLaunchErrorTests {
    @Test("an agent whose #! interpreter is missing fails at exec with ENOENT, named with its path and errno")
    func missingInterpreter() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("oa-launch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let agent = directory.appendingPathComponent("agent").path
        try "#!/nonexistent/interpreter\n".write(toFile: agent, atomically: true, encoding: .utf8)
        #expect(chmod(agent, 0o755) == 0)
        do {
            _ = try await StdioAgent.launch(StdioAgentConfiguration(command: [agent]), logger: Logger(label: "test"))
            Issue.record("should not launch")
        } catch {
            #expect(error == .spawnFailed(ChildProcessError(executable: agent, stage: .exec, errno: ENOENT)))
            #expect(error.description == "the agent could not be started: cannot start \(agent): No such file or directory (exec, errno 2)")
            #expect(error.rpcError.message.contains("errno 2"))
        }
    }

    @Test("a working directory that vanished before the start fails at the directory step with ENOENT")
    func vanishedDirectory() throws {
        let request = StdioAgentLaunchRequest(
            executable: "/bin/sh", arguments: [], environment: [:], workingDirectory: "/nonexistent/oa-bridge-dir",
            stdin: -1, stdout: -1, stderr: -1)
        #expect(throws: ACPAgentError.spawnFailed(ChildProcessError(executable: "/bin/sh", stage: .directory, errno: ENOENT))) {
            _ = try StdioAgentProcessLauncher().launch(request)
        }
    }
}
