import CSandbox
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A command started under a supervisor (see `csb_spawn` in CSandbox): from a directory's descriptor (no path to
/// race on), optionally under a ``LandlockRuleset`` and `PR_SET_NO_NEW_PRIVS`, in a process group of its own whose
/// every member is killed when the bridge's process dies, however it dies (`kill -9`, the OOM killer). The command
/// dies with its supervisor (`PR_SET_PDEATHSIG`), and the supervisor watches the bridge's whole process (a pidfd),
/// not the thread that started it, so no thread ending kills a command.
///
/// ``wait()`` reports how the command ended (the supervisor ends the same way); ``terminate()`` asks the command to end
/// (SIGTERM, passed on by the supervisor); ``kill()`` sends SIGKILL to the group.
public final class ConfinedProcess: Sendable {
    /// What to start.
    public struct Request: Sendable {
        /// The program's absolute path.
        public var executable: String
        /// Its arguments, without the program's name (`argv[0]` is the executable).
        public var arguments: [String]
        /// Its whole environment.
        public var environment: [String: String]
        /// The directory it starts in (a descriptor the caller keeps open until ``spawn(_:)`` returns); `nil`: the
        /// bridge's own.
        public var directory: Int32?
        /// Where standard output goes (the caller keeps the descriptor).
        public var output: Int32
        /// Where standard error goes; `nil`: with standard output.
        public var error: Int32?
        /// Standard input; `nil`: `/dev/null`.
        public var input: Int32?
        /// The ruleset it runs under; `nil` runs it unconfined (but still killed with the bridge).
        public var ruleset: LandlockRuleset?

        /// A request of its parts.
        public init(
            executable: String, arguments: [String], environment: [String: String], directory: Int32?, output: Int32,
            error: Int32? = nil, input: Int32? = nil, ruleset: LandlockRuleset?
        ) {
            self.executable = executable
            self.arguments = arguments
            self.environment = environment
            self.directory = directory
            self.output = output
            self.error = error
            self.input = input
            self.ruleset = ruleset
        }
    }

    /// How a process ended.
    public enum Exit: Sendable, Equatable {
        /// It exited with this code.
        case exited(Int32)
        /// A signal ended it.
        case signaled(Int32)
    }

    /// The supervisor's process id, also the process group's id.
    public let pid: Int32
    private let state = Mutex<(exit: Exit?, waiters: [CheckedContinuation<Exit, Never>])>((nil, []))

    private init(pid: Int32) {
        self.pid = pid
    }

    /// Starts `request`; returns once the command has been executed.
    /// - Throws: ``SandboxError/spawnFailed(stage:errno:)`` naming the step that failed (chdir, landlock, exec...).
    public static func spawn(_ request: Request) throws(SandboxError) -> ConfinedProcess {
        let null = open("/dev/null", O_RDWR | O_CLOEXEC)
        guard null >= 0 else { throw .spawnFailed(stage: "open /dev/null", errno: errno) }
        defer { close(null) }
        let argv = ([request.executable] + request.arguments).map { strdup($0) } + [nil]
        let envp = request.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        var stage: Int32 = 0
        var code: Int32 = 0
        let result = request.executable.withCString { path in
            argv.withUnsafeBufferPointer { argvBuffer in
                envp.withUnsafeBufferPointer { envpBuffer in
                    var spawn = csb_spawn_request(
                        path: path, argv: argvBuffer.baseAddress, envp: envpBuffer.baseAddress,
                        directory: request.directory ?? -1, input: request.input ?? null, output: request.output,
                        error: request.error ?? request.output,
                        ruleset: request.ruleset?.descriptor ?? -1, no_new_privs: request.ruleset == nil ? 0 : 1)
                    return withExtendedLifetime(request.ruleset) { csb_spawn(&spawn, &pid, &stage, &code) }
                }
            }
        }
        guard result == 0 else { throw .spawnFailed(stage: Self.stageName(stage), errno: code) }
        let process = ConfinedProcess(pid: pid)
        process.startWaiting()
        return process
    }

    /// How the command ended, once it has.
    public var exit: Exit? { state.withLock { $0.exit } }

    /// Waits until the command has ended. Not cut short by cancellation: a killed process still has to go.
    public func wait() async -> Exit {
        await withCheckedContinuation { continuation in
            let known = state.withLock { state -> Exit? in
                if let exit = state.exit { return exit }
                state.waiters.append(continuation)
                return nil
            }
            if let known { continuation.resume(returning: known) }
        }
    }

    /// SIGTERM to the supervisor, which passes it on to the command (see `csb_spawn`): the command may end
    /// gracefully, and the supervisor then ends as it did.
    public func terminate() {
        _ = sendSignal(pid, SIGTERM)
    }

    /// SIGKILL to the process group (the supervisor, the command and the children that stayed in the group).
    /// Harmless once they are gone: the group id is not reused while any member lives.
    public func kill() {
        _ = sendSignal(-pid, SIGKILL)
    }

    /// Reaps the supervisor on a thread of its own (waitpid blocks), then tells the waiters.
    private func startWaiting() {
        let pid = self.pid
        let thread = Thread { [self] in
            var status: Int32 = 0
            var result: pid_t
            repeat { result = waitpid(pid, &status, 0) } while result < 0 && errno == EINTR
            let exit: Exit = result < 0 ? .exited(127) : (status & 0x7f == 0 ? .exited((status >> 8) & 0xff) : .signaled(status & 0x7f))
            let waiters = state.withLock { state -> [CheckedContinuation<Exit, Never>] in
                state.exit = exit
                defer { state.waiters.removeAll() }
                return state.waiters
            }
            for waiter in waiters { waiter.resume(returning: exit) }
        }
        thread.name = "oa-bridge confined \(pid)"
        thread.stackSize = 64 << 10
        thread.start()
    }

    static func stageName(_ stage: Int32) -> String {
        switch UInt32(bitPattern: stage) {
        case CSB_STAGE_PIPE.rawValue: return "pipe"
        case CSB_STAGE_FORK.rawValue: return "fork"
        case CSB_STAGE_PARENT_GONE.rawValue: return "parent gone"
        case CSB_STAGE_CHDIR.rawValue: return "chdir"
        case CSB_STAGE_NO_NEW_PRIVS.rawValue: return "no_new_privs"
        case CSB_STAGE_LANDLOCK.rawValue: return "landlock"
        case CSB_STAGE_EXEC.rawValue: return "exec"
        case CSB_STAGE_UNSUPPORTED.rawValue: return "unsupported platform"
        default: return "stage \(stage)"
        }
    }
}

// kill(2) under a name the type's own `kill()` does not hide.
private func sendSignal(_ pid: Int32, _ signal: Int32) -> Int32 { kill(pid, signal) }
