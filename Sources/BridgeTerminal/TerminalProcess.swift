import BridgeProcess
import BridgeSandbox
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A terminal's command in a child process: `/bin/sh -c '<command> <args…>'` (the command line as the agent wrote it,
/// each argument quoted), as Zed runs one, started as a supervised `ChildProcess` (BridgeProcess): from the directory's
/// descriptor (no path that could be swapped meanwhile), under a Landlock ruleset when one is given, in its own process
/// group whose every member dies with the bridge, stdin from `/dev/null`, stdout and stderr into one pipe whose read
/// end ``outputDescriptor`` the caller reads (with SwiftNIO) and closes.
///
/// This type adds only that to the `ChildProcess` it holds: the command line, the output pipe, the exit in the
/// terminal's words.
///
/// ``kill()`` sends SIGKILL to the whole process group, so the children the command started go too (a child that
/// moved to a group of its own escapes it).
package final class TerminalProcess: Sendable {
    /// The process id (also its process group id): the supervisor that runs the command and ends as it ends.
    let pid: Int32
    /// The read end of the output pipe (close-on-exec); the caller owns it.
    let outputDescriptor: CInt
    private let process: ChildProcess

    private init(process: ChildProcess, outputDescriptor: CInt) {
        self.process = process
        self.pid = process.pid
        self.outputDescriptor = outputDescriptor
    }

    /// The shell command line for `command` and `args`: the command as written, each argument single-quoted.
    static func commandLine(_ command: String, _ args: [String]) -> String {
        ([command] + args.map(quoted)).joined(separator: " ")
    }

    /// `text` single-quoted for `sh` (`'` becomes `'\''`).
    static func quoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
    }

    /// Starts the command in the directory open at `directory` with the bridge's environment plus `environment`,
    /// under `ruleset` when given.
    static func launch(
        command: String, args: [String], environment: [(String, String)], directory: Int32, ruleset: LandlockRuleset?
    ) throws(TerminalError) -> TerminalProcess {
        let pipe: ChildProcessPipe
        do {
            pipe = try ChildProcessPipe(for: "/bin/sh")
        } catch {
            throw .spawnFailed(command: command, error)
        }
        var variables = ProcessInfo.processInfo.environment
        for (name, value) in environment { variables[name] = value }
        defer { close(pipe.write) }  // the child has its copy
        do {
            let process = try ChildProcess.spawn(ChildProcess.Request(
                executable: "/bin/sh", arguments: ["-c", commandLine(command, args)], environment: variables,
                directory: .descriptor(directory), output: pipe.write, error: pipe.write, confinement: ruleset, supervised: true))
            return TerminalProcess(process: process, outputDescriptor: pipe.read)
        } catch {
            close(pipe.read)
            throw .spawnFailed(command: command, error)
        }
    }

    /// ``launch(command:args:environment:directory:ruleset:)`` in the directory at `directory` (opened here),
    /// unconfined.
    static func launch(
        command: String, args: [String], environment: [(String, String)], directory: String
    ) throws(TerminalError) -> TerminalProcess {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw .launchFailed(command: command, reason: "cannot open \(directory): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        return try launch(command: command, args: args, environment: environment, directory: descriptor, ruleset: nil)
    }

    /// How the process ended, once it has.
    var exitStatus: TerminalExitStatus? { process.exit.map(Self.status) }

    /// Waits until the process has ended.
    ///
    /// Not cut short by cancellation: a killed process still has to go.
    func wait() async -> TerminalExitStatus {
        Self.status(await process.wait())
    }

    /// SIGKILL to the process group.
    ///
    /// Harmless once the process is gone: its group id is not reused while any member of the group lives.
    package func kill() {
        process.kill()
    }

    /// Nothing left to free: the supervisor was reaped by its `ChildProcess` when it ended.
    func reap() {}

    private static func status(_ exit: ChildProcess.Exit) -> TerminalExitStatus {
        switch exit {
        case .exited(let code): return .exited(code)
        case .signaled(let signal): return .killed(by: signal)
        }
    }
}
