import BridgeSandbox
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("ConfinedProcess", .tags(.externalTool))
struct ConfinedProcessTests {
    @Test("the command starts in the directory it was given by descriptor, even once a symbolic link took its name")
    func startsFromTheDescriptor() async throws {
        let fixture = try SandboxFixture()
        try fixture.makeDirectory("work")
        try fixture.makeDirectory("outside")
        let fd = try fixture.openDirectory("work")
        defer { close(fd) }
        // The name now leads elsewhere: a start by path would run in "outside".
        #expect(rename(fixture.path("work"), fixture.path("moved")) == 0)
        #expect(symlink(fixture.path("outside"), fixture.path("work")) == 0)
        let (exit, output) = try await runConfined("pwd -P", directory: fd, ruleset: nil)
        #expect(exit == .exited(0))
        #expect(output == fixture.path("moved") + "\n")
    }

    @Test("the exit code and the killing signal are the command's own")
    func mirrorsTheEnd() async throws {
        let (code, _) = try await runConfined("exit 3", directory: nil, ruleset: nil)
        #expect(code == .exited(3))
        let (signal, _) = try await runConfined("kill -TERM $$", directory: nil, ruleset: nil)
        #expect(signal == .signaled(SIGTERM))
    }

    @Test("a program that does not exist is a spawn error naming exec and ENOENT")
    func missingProgram() throws {
        #expect(throws: SandboxError.spawnFailed(stage: "exec", errno: ENOENT)) {
            _ = try ConfinedProcess.spawn(ConfinedProcess.Request(
                executable: "/nonexistent/program", arguments: [], environment: [:], directory: nil, output: 2, ruleset: nil))
        }
    }

    @Test("kill() ends the command and the children it started in its group")
    func killsTheGroup() async throws {
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        defer { close(ends[0]) }
        let process = try ConfinedProcess.spawn(ConfinedProcess.Request(
            executable: "/bin/sh", arguments: ["-c", "sleep 300 & echo $!; sleep 300; echo never"], environment: [:], directory: nil,
            output: ends[1], ruleset: nil))
        close(ends[1])
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = read(ends[0], &buffer, buffer.count)
        let child = Int32(String(decoding: buffer[0..<max(count, 0)], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        let background = try #require(child)
        process.kill()
        #expect(await process.wait() == .signaled(SIGKILL))
        // The background sleep was in the group: gone (a zombie until init reaps it, so look for a while).
        var alive = true
        for _ in 0..<100 where alive {
            alive = kill(background, 0) == 0 && !isZombie(background)
            if alive { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(!alive)
    }
}

/// Whether `pid` is a zombie (state Z in /proc).
func isZombie(_ pid: Int32) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return false }
    return stat[stat.index(close, offsetBy: 2)] == "Z"
}
