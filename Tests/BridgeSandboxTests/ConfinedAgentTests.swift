@testable import BridgeSandbox
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What running an agent (a long-lived command on three pipes) through ``ConfinedProcess`` needs beyond a terminal.
@Suite("ConfinedProcess for an agent", .tags(.externalTool))
struct ConfinedAgentTests {
    @Test("terminate() reaches the command (passed on by the supervisor), which ends gracefully with its own status")
    func terminateIsPassedOn() async throws {
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        let reader = FileHandle(fileDescriptor: ends[0], closeOnDealloc: true)
        let process = try ConfinedProcess.spawn(ConfinedProcess.Request(
            executable: "/bin/sh", arguments: ["-c", "trap 'echo graceful; exit 7' TERM; echo ready; while :; do sleep 0.05; done"],
            environment: ["PATH": "/usr/bin:/bin"], directory: nil, output: ends[1], ruleset: nil))
        close(ends[1])
        var seen = ""
        while !seen.contains("ready\n") {
            let chunk = reader.availableData
            if chunk.isEmpty { break }
            seen += String(decoding: chunk, as: UTF8.self)
        }
        process.terminate()
        #expect(await process.wait() == .exited(7))
        seen += String(decoding: reader.readDataToEndOfFile(), as: UTF8.self)
        #expect(seen == "ready\ngraceful\n")
    }

    @Test("standard input, output and error are the three descriptors given")
    func threePipes() async throws {
        var input: [Int32] = [-1, -1], output: [Int32] = [-1, -1], errors: [Int32] = [-1, -1]
        #expect(pipe(&input) == 0 && pipe(&output) == 0 && pipe(&errors) == 0)
        for fd in input + output + errors { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let process = try ConfinedProcess.spawn(ConfinedProcess.Request(
            executable: "/bin/sh", arguments: ["-c", "read line; echo \"out:$line\"; echo \"err:$line\" >&2"],
            environment: ["PATH": "/usr/bin:/bin"], directory: nil, output: output[1], error: errors[1], input: input[0], ruleset: nil))
        close(input[0])
        close(output[1])
        close(errors[1])
        let line = Array("hello\n".utf8)
        #expect(write(input[1], line, line.count) == line.count)
        close(input[1])
        let out = FileHandle(fileDescriptor: output[0], closeOnDealloc: true).readDataToEndOfFile()
        let err = FileHandle(fileDescriptor: errors[0], closeOnDealloc: true).readDataToEndOfFile()
        #expect(await process.wait() == .exited(0))
        #expect(String(decoding: out, as: UTF8.self) == "out:hello\n")
        #expect(String(decoding: err, as: UTF8.self) == "err:hello\n")
    }
}

@Suite("Landlock's usable ABI", .tags(.unit))
struct LandlockABITests {
    @Test("no Landlock, or an ABI older than 3 (no truncate right), is unusable; 3 and later are used")
    func minimum() {
        #expect(Landlock.usableABI(probe: { .failure(.landlockUnavailable(errno: ENOSYS)) }) == .failure(.landlockUnavailable(errno: ENOSYS)))
        #expect(Landlock.usableABI(probe: { .success(1) }) == .failure(.landlockTooOld(abi: 1, minimum: 3)))
        #expect(Landlock.usableABI(probe: { .success(2) }) == .failure(.landlockTooOld(abi: 2, minimum: 3)))
        #expect(Landlock.usableABI(probe: { .success(3) }) == .success(3))
        #expect(Landlock.usableABI(probe: { .success(7) }) == .success(7))
        #expect(SandboxError.landlockTooOld(abi: 2, minimum: 3).description.contains("truncat"))
    }
}

@Suite("AgentInstallation", .tags(.unit))
struct AgentInstallationTests {
    @Test("a venv's program brings the venv (through its bin), its interpreter's prefix, and the script the command names")
    func venvAndScript() throws {
        let fixture = try SandboxFixture()
        try fixture.makeDirectory("home/project/.venv/bin")
        try fixture.makeDirectory("opt/python/bin")
        try fixture.makeDirectory("home/agents")
        try fixture.write("opt/python/bin/python3.12", "")
        #expect(symlink(fixture.path("opt/python/bin/python3.12"), fixture.path("home/project/.venv/bin/python")) == 0)
        try fixture.write("home/agents/agent.py", "print()")
        let paths = AgentInstallation.paths(
            executable: fixture.path("home/project/.venv/bin/python"), arguments: ["-u", "agent.py"],
            workingDirectory: fixture.path("home/agents"), environment: ["HOME": fixture.path("home")])
        #expect(paths == [fixture.path("home/project/.venv"), fixture.path("opt/python"), fixture.path("home/agents")])
    }

    @Test("a #! line through /usr/bin/env is followed to the interpreter found on PATH")
    func shebangThroughEnv() throws {
        let fixture = try SandboxFixture()
        try fixture.makeDirectory("node/bin")
        try fixture.makeDirectory("node/lib/node_modules/agent")
        try fixture.write("node/lib/node_modules/agent/index.js", "#!/usr/bin/env node\n")
        try fixture.write("node/bin/node", "")
        #expect(chmod(fixture.path("node/bin/node"), 0o755) == 0)
        #expect(symlink("../lib/node_modules/agent/index.js", fixture.path("node/bin/agent")) == 0)
        let paths = AgentInstallation.paths(
            executable: fixture.path("node/bin/agent"), arguments: ["--acp"], workingDirectory: nil,
            environment: ["HOME": "/nonexistent-home", "PATH": fixture.path("node/bin")])
        #expect(paths == [fixture.path("node"), fixture.path("node/lib/node_modules/agent")])
    }

    @Test("the home directory, ~/.local and / are never granted whole")
    func neverTheHome() throws {
        let home = "/home/alice"
        #expect(AgentInstallation.grant(for: "/home/alice/agent.py", home: home) == ["/home/alice/agent.py"])
        #expect(AgentInstallation.grant(for: "/home/alice/bin/agent", home: home) == ["/home/alice/bin", "/home/alice/lib"])
        #expect(AgentInstallation.grant(for: "/home/alice/.local/bin/agent", home: home) == ["/home/alice/.local/bin", "/home/alice/.local/lib"])
        #expect(AgentInstallation.grant(for: "/bin/agent", home: home) == ["/bin", "/lib"])
        #expect(AgentInstallation.grant(for: "/agent", home: home) == ["/agent"])
        #expect(AgentInstallation.grant(for: "/home/agent", home: home) == ["/home/agent"])
        #expect(AgentInstallation.grant(for: "/usr/local/bin/agent", home: home) == ["/usr/local"])
    }
}
