import BridgeProcess
import BridgeTestKit
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("ChildProcess", .tags(.externalTool))
struct ChildProcessTests {
    @Test("the exit code and the killing signal are the command's own, supervised or not", arguments: [false, true])
    func mirrorsTheEnd(supervised: Bool) async throws {
        let (code, _) = try startShell("exit 3", supervised: supervised)
        #expect(await code.wait() == .exited(3))
        let (signal, _) = try startShell("kill -TERM $$", supervised: supervised)
        #expect(await signal.wait() == .signaled(SIGTERM))
    }

    @Test("the command starts in the directory it was given by descriptor, even once a symbolic link took its name")
    func startsFromTheDescriptor() async throws {
        let fixture = try ProcessFixture()
        try FileManager.default.createDirectory(atPath: fixture.path("work"), withIntermediateDirectories: false)
        try FileManager.default.createDirectory(atPath: fixture.path("outside"), withIntermediateDirectories: false)
        let fd = open(fixture.path("work"), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        #expect(fd >= 0)
        defer { close(fd) }
        // The name now leads elsewhere: a start by path would run in "outside".
        #expect(rename(fixture.path("work"), fixture.path("moved")) == 0)
        #expect(symlink(fixture.path("outside"), fixture.path("work")) == 0)
        let (process, output) = try startShell("pwd -P", supervised: true, directory: .descriptor(fd))
        #expect(await process.wait() == .exited(0))
        let real = try #require(realpath(fixture.path("moved"), nil))
        defer { free(real) }
        #expect(String(decoding: output.readDataToEndOfFile(), as: UTF8.self) == String(cString: real) + "\n")
    }

    @Test("a program that does not exist: exec and ENOENT, with its path, in the error and its message")
    func missingProgram() throws {
        let error = ChildProcessError(executable: "/nonexistent/program", stage: .exec, errno: ENOENT)
        for supervised in [false, true] {
            #expect(throws: error) {
                _ = try ChildProcess.spawn(ChildProcess.Request(
                    executable: "/nonexistent/program", arguments: [], environment: [:], supervised: supervised))
            }
        }
        #expect(error.description == "cannot start /nonexistent/program: No such file or directory (exec, errno 2)")
    }

    @Test("a file that is not executable: exec and EACCES")
    func notExecutable() throws {
        let fixture = try ProcessFixture()
        try "echo hi\n".write(toFile: fixture.path("script"), atomically: true, encoding: .utf8)
        #expect(throws: ChildProcessError(executable: fixture.path("script"), stage: .exec, errno: EACCES)) {
            _ = try ChildProcess.spawn(ChildProcess.Request(
                executable: fixture.path("script"), arguments: [], environment: [:], supervised: false))
        }
    }

    @Test("a working directory that is not there: the directory stage and ENOENT")
    func missingDirectory() throws {
        #expect(throws: ChildProcessError(executable: "/bin/true", stage: .directory, errno: ENOENT)) {
            _ = try ChildProcess.spawn(ChildProcess.Request(
                executable: "/bin/true", arguments: [], environment: [:], directory: .path("/nonexistent/directory"),
                supervised: false))
        }
    }

    @Test("a child started from a cooperative-pool thread has no signal blocked or ignored, supervised or not")
    func signalsAtTheirDefaults() async throws {
        // The pool's threads block nearly every signal and a child inherits the mask; SIGPIPE is ignored by the bridge.
        let previous = Glibc.signal(SIGPIPE, SIG_IGN)
        defer { Glibc.signal(SIGPIPE, previous) }
        for supervised in [false, true] {
            // grep reads its own mask and ignored set, as exec left them.
            let (process, output) = try startShell("exec grep -E '^Sig(Blk|Ign)' /proc/self/status", supervised: supervised)
            let seen = String(decoding: output.readDataToEndOfFile(), as: UTF8.self)
            let masks = Dictionary(uniqueKeysWithValues: seen.split(separator: "\n").compactMap { line -> (String, UInt64)? in
                let parts = line.split(separator: ":\t")
                guard parts.count == 2, let mask = UInt64(parts[1], radix: 16) else { return nil }
                return (String(parts[0]), mask)
            })
            #expect(masks["SigBlk"] == 0)
            // Signals 1 to 31 (glibc keeps 32 and 33 for itself: sigaction cannot change them, and nothing sends them).
            #expect(masks["SigIgn"].map { $0 & 0x7fff_ffff } == 0)
            #expect(await process.wait() == .exited(0))
        }
    }

    @Test("SIGTERM ends a direct child started from a cooperative-pool thread")
    func terminateEndsADirectChild() async throws {
        let (process, output) = try startShell("echo ready; exec sleep 30", supervised: false)
        _ = read(output, until: "ready\n")
        process.terminate()
        #expect(await process.wait() == .signaled(SIGTERM))
    }

    @Test("terminate() reaches a supervised command (passed on by the supervisor), which ends gracefully with its own status")
    func terminateIsPassedOn() async throws {
        // The sleep runs in the background so that the shell's wait, not the sleep, is what SIGTERM interrupts.
        let (process, output) = try startShell(
            "trap 'kill $!; echo graceful; exit 7' TERM; sleep 300 & echo ready; wait", supervised: true)
        var seen = read(output, until: "ready\n")
        process.terminate()
        #expect(await process.wait() == .exited(7))
        seen += String(decoding: output.readDataToEndOfFile(), as: UTF8.self)
        #expect(seen == "ready\ngraceful\n")
    }

    @Test("kill() ends a supervised command and the children it started in its group")
    func killsTheGroup() async throws {
        let (process, output) = try startShell("sleep 300 & echo $!; sleep 300; echo never", supervised: true)
        let line = read(output, until: "\n").trimmingCharacters(in: .whitespacesAndNewlines)
        let background = try #require(Int32(line))
        process.kill()
        #expect(await process.wait() == .signaled(SIGKILL))
        // The background sleep was in the group: it ends (a zombie until init reaps it, which counts as ended).
        #expect(await ProcessEnd.wait(for: background), "the background child is killed with the group")
    }

    @Test("standard input, output and error are the three descriptors given")
    func threePipes() async throws {
        let input = try ChildProcessPipe(for: "/bin/sh")
        let output = try ChildProcessPipe(for: "/bin/sh")
        let errors = try ChildProcessPipe(for: "/bin/sh")
        let process = try ChildProcess.spawn(ChildProcess.Request(
            executable: "/bin/sh", arguments: ["-c", "read line; echo \"out:$line\"; echo \"err:$line\" >&2"],
            environment: ["PATH": "/usr/bin:/bin"], input: input.read, output: output.write, error: errors.write, supervised: true))
        close(input.read)
        close(output.write)
        close(errors.write)
        let line = Array("hello\n".utf8)
        #expect(write(input.write, line, line.count) == line.count)
        close(input.write)
        let out = FileHandle(fileDescriptor: output.read, closeOnDealloc: true).readDataToEndOfFile()
        let err = FileHandle(fileDescriptor: errors.read, closeOnDealloc: true).readDataToEndOfFile()
        #expect(await process.wait() == .exited(0))
        #expect(String(decoding: out, as: UTF8.self) == "out:hello\n")
        #expect(String(decoding: err, as: UTF8.self) == "err:hello\n")
    }

    @Test("kill() still reaches what a supervised command left in its group after it ended")
    func killsTheGroupLeftBehind() async throws {
        let (process, output) = try startShell("sleep 300 & echo $!", supervised: true)
        let line = read(output, until: "\n").trimmingCharacters(in: .whitespacesAndNewlines)
        let background = try #require(Int32(line))
        #expect(await process.wait() == .exited(0))
        #expect(kill(background, 0) == 0)
        process.kill()
        #expect(await ProcessEnd.wait(for: background), "what the command left in its group is killed")
    }

    @Test("the test kit's ProcessEnd tells a process that goes on from one that ended (a zombie counts as ended)")
    func processEndTellsTheEnd() async throws {
        let (process, output) = try startShell("echo $$; exec sleep 300", supervised: false)
        let pid = try #require(Int32(read(output, until: "\n").trimmingCharacters(in: .whitespacesAndNewlines)))
        // Alive: the bound passes and the wait says so (a short bound cannot make this flaky: the sleep goes on).
        #expect(await ProcessEnd.wait(for: pid, timeout: .milliseconds(300)) == false)
        process.kill()
        #expect(await ProcessEnd.wait(for: pid))
        #expect(await process.wait() == .signaled(SIGKILL))
        #expect(await ProcessEnd.wait(for: pid), "reaped: gone at once")
    }

    @Test("a signal sent after the child has been reaped goes nowhere")
    func noSignalAfterTheEnd() async throws {
        let (process, _) = try startShell("exit 0", supervised: false)
        #expect(await process.wait() == .exited(0))
        process.kill()
        process.terminate()
        #expect(process.exit == .exited(0))
    }
}

@Suite("ChildProcess.run", .tags(.externalTool))
struct ChildProcessRunTests {
    @Test("collects standard output, with standard error when asked, and the exit")
    func collects() async throws {
        let both = try await ChildProcess.run("/bin/sh", ["-c", "echo out; echo err >&2; exit 4"], withErrors: true)
        #expect(both.exit == .exited(4))
        #expect(both.text == "out\nerr\n")
        let out = try await ChildProcess.run("/bin/sh", ["-c", "echo out; echo err >&2"], withErrors: false)
        #expect(out.text == "out\n")
    }

    @Test("keeps at most the limit")
    func limit() async throws {
        let result = try await ChildProcess.run("/bin/sh", ["-c", "head -c 100000 /dev/zero"], withErrors: false, limit: 1000)
        #expect(result.output.count == 1000)
    }

    @Test("a missing program is a ChildProcessError with ENOENT")
    func missing() async {
        await #expect(throws: ChildProcessError(executable: "/nonexistent/tool", stage: .exec, errno: ENOENT)) {
            _ = try await ChildProcess.run("/nonexistent/tool", [], withErrors: true)
        }
    }

    @Test("cancelling the caller kills the command")
    func cancellation() async throws {
        // Cancelled before, while or after it starts, the command is killed (without the kill, 30 s of sleep).
        let task = Task { try await ChildProcess.run("/bin/sleep", ["30"], withErrors: true) }
        task.cancel()
        let result = try await task.value
        #expect(result.exit == .signaled(SIGKILL))
    }
}
