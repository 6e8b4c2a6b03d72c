import Foundation
import Testing
@testable import BridgeSandbox
#if canImport(Glibc)
import Glibc
#endif

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
