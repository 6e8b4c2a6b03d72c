import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A terminal's command in a child process: `/bin/sh -c '<command> <args…>'` (the command line as the agent wrote it,
/// each argument quoted), as Zed runs one, in its own process group, stdin from `/dev/null`, stdout and stderr into one
/// pipe whose read end ``outputDescriptor`` the caller reads (with SwiftNIO) and closes.
///
/// ``kill()`` sends SIGKILL to the whole process group, so the children the command started go too (a child that
/// moved to a group of its own escapes it).
package final class TerminalProcess: Sendable {
    /// The process id (also its process group id).
    let pid: Int32
    /// The read end of the output pipe (close-on-exec); the caller owns it.
    let outputDescriptor: CInt
    private let process: Process
    private let group: Int32?
    private let state = Mutex<(status: TerminalExitStatus?, waiters: [CheckedContinuation<TerminalExitStatus, Never>])>((nil, []))

    private init(process: Process, outputDescriptor: CInt) {
        self.process = process
        self.pid = process.processIdentifier
        self.outputDescriptor = outputDescriptor
        // Foundation starts children in a process group of their own (POSIX_SPAWN_SETPGROUP); never signal the
        // bridge's own group should that ever change.
        let group = getpgid(process.processIdentifier)
        self.group = group > 0 && group == process.processIdentifier && group != getpgrp() ? group : nil
    }

    /// The shell command line for `command` and `args`: the command as written, each argument single-quoted.
    static func commandLine(_ command: String, _ args: [String]) -> String {
        ([command] + args.map(quoted)).joined(separator: " ")
    }

    /// `text` single-quoted for `sh` (`'` becomes `'\''`).
    static func quoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
    }

    /// Starts the command in `directory` with the bridge's environment plus `environment`.
    static func launch(
        command: String, args: [String], environment: [(String, String)], directory: String
    ) throws(TerminalError) -> TerminalProcess {
        var ends: [CInt] = [-1, -1]
        guard pipe(&ends) == 0 else {
            throw .launchFailed(command: command, reason: "no pipe for its output: \(String(cString: strerror(errno)))")
        }
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        var variables = ProcessInfo.processInfo.environment
        for (name, value) in environment { variables[name] = value }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", commandLine(command, args)]
        process.environment = variables
        process.currentDirectoryURL = URL(fileURLWithPath: directory, isDirectory: true)
        process.standardInput = FileHandle.nullDevice
        let output = FileHandle(fileDescriptor: ends[1], closeOnDealloc: false)
        process.standardOutput = output
        process.standardError = output
        let exit = ExitBox()
        process.terminationHandler = { finished in
            let code = finished.terminationStatus
            exit.ended(finished.terminationReason == .uncaughtSignal ? .killed(by: code) : .exited(code))
        }
        do {
            try process.run()
        } catch {
            close(ends[0])
            close(ends[1])
            throw .launchFailed(command: command, reason: error.localizedDescription)
        }
        close(ends[1])  // the child has its copy
        let terminal = TerminalProcess(process: process, outputDescriptor: ends[0])
        exit.set(terminal)
        return terminal
    }

    /// How the process ended, once it has.
    var exitStatus: TerminalExitStatus? { state.withLock { $0.status } }

    /// Waits until the process has ended. Not cut short by cancellation: a killed process still has to go.
    func wait() async -> TerminalExitStatus {
        await withCheckedContinuation { continuation in
            let known = state.withLock { state -> TerminalExitStatus? in
                if let status = state.status { return status }
                state.waiters.append(continuation)
                return nil
            }
            if let known { continuation.resume(returning: known) }
        }
    }

    /// SIGKILL to the process group (to the process alone where it has no group of its own). Harmless once the
    /// process is gone: its group id is not reused while any member of the group lives.
    package func kill() {
        if let group {
            _ = sendSignal(-group, SIGKILL)
        } else if exitStatus == nil {
            _ = sendSignal(pid, SIGKILL)
        }
    }

    /// Lets Foundation free the `Process` once it has ended: swift-corelibs-foundation keeps a `Process` with a
    /// `terminationHandler` alive until `waitUntilExit()` is called (repro/foundation-process-retain, mode
    /// handler-then-wait: 0 of 200 alive). Called after the handler ran, so it does not wait.
    func reap() {
        guard exitStatus != nil else { return }
        process.waitUntilExit()
    }

    private func ended(_ result: TerminalExitStatus) {
        let resumed = state.withLock { state -> [CheckedContinuation<TerminalExitStatus, Never>] in
            guard state.status == nil else { return [] }
            state.status = result
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in resumed { waiter.resume(returning: result) }
    }

    /// Hands the termination handler (set before the process exists) the object to tell; an exit seen before that is
    /// kept and told on ``set(_:)``. It lets go of the object once told (the handler, kept by the `Process`, would
    /// otherwise keep it alive: a cycle).
    private final class ExitBox: Sendable {
        private let state = Mutex<(terminal: TerminalProcess?, early: TerminalExitStatus?)>((nil, nil))

        func set(_ terminal: TerminalProcess) {
            let early = state.withLock { state -> TerminalExitStatus? in
                if state.early == nil { state.terminal = terminal }
                return state.early
            }
            if let early { terminal.ended(early) }
        }

        func ended(_ result: TerminalExitStatus) {
            let terminal = state.withLock { state -> TerminalProcess? in
                if state.terminal == nil { state.early = result }
                defer { state.terminal = nil }
                return state.terminal
            }
            terminal?.ended(result)
        }
    }
}

// kill(2) under a name the type's own `kill()` does not hide.
private func sendSignal(_ pid: Int32, _ signal: Int32) -> Int32 { kill(pid, signal) }
