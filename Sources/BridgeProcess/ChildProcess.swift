import CProcess
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The package's one child process: every program the bridge starts (the agent, a terminal's shell, `tailscale`,
/// doctor's `nft`/`ip`/`ufw`, install-service's `systemctl`) starts here, through `cpr_spawn` in CProcess, which runs
/// code between fork and exec that Foundation's `Process` cannot: the child enters its directory by descriptor (no
/// path to race on), empties its signal mask and resets every signal to its default (a child of a cooperative-pool
/// thread would otherwise start with SIGTERM blocked), optionally sets `PR_SET_NO_NEW_PRIVS` and restricts itself to
/// a Landlock ruleset (``Request/confinement``), then execs.
///
/// ``Request/supervised`` puts it under a supervisor in a process group of its own whose every member is killed when
/// the bridge's process dies, however it dies (`kill -9`, the OOM killer); the supervisor passes SIGTERM and the
/// like on and ends as the command ended. Otherwise it is a direct child in the bridge's process group.
///
/// A launch failure is a ``ChildProcessError``: the program, the step and the `errno`. ``wait()`` reports how it
/// ended; ``terminate()`` sends SIGTERM; ``kill()`` SIGKILL (to the whole group when supervised). The child is reaped
/// on a small thread of its own (waitpid(2) blocks; no thread of the concurrency pool or of NIO waits).
public final class ChildProcess: Sendable {
    /// Where the child starts.
    public enum Directory: Sendable, Hashable {
        /// The bridge's own working directory.
        case inherited
        /// The directory open at this descriptor (the caller keeps it open until ``spawn(_:)`` returns).
        case descriptor(Int32)
        /// The directory at this path (opened, then entered by descriptor).
        case path(String)
    }

    /// What to start.
    public struct Request: Sendable {
        /// The program's absolute path.
        public var executable: String
        /// Its arguments, without the program's name (`argv[0]` is the executable).
        public var arguments: [String]
        /// Its whole environment.
        public var environment: [String: String]
        /// Where it starts.
        public var directory: Directory
        /// Standard input (the caller keeps its descriptor); `nil`: `/dev/null`.
        public var input: Int32?
        /// Standard output; `nil`: `/dev/null`.
        public var output: Int32?
        /// Standard error; `nil`: `/dev/null`.
        public var error: Int32?
        /// The Landlock ruleset it runs under (with `PR_SET_NO_NEW_PRIVS`); `nil`: unconfined.
        public var confinement: (any ChildProcessConfinement)?
        /// Under a supervisor in a process group of its own, killed with the bridge; `false`: a direct child.
        public var supervised: Bool
        /// Run once it has ended, on the reaping thread, before the waiters are told (for example to remove its scratch
        /// directory); short and non-blocking.
        public var whenEnded: (@Sendable () -> Void)?

        /// A request of its parts.
        public init(
            executable: String, arguments: [String], environment: [String: String], directory: Directory = .inherited,
            input: Int32? = nil, output: Int32? = nil, error: Int32? = nil, confinement: (any ChildProcessConfinement)? = nil,
            supervised: Bool, whenEnded: (@Sendable () -> Void)? = nil
        ) {
            self.executable = executable
            self.arguments = arguments
            self.environment = environment
            self.directory = directory
            self.input = input
            self.output = output
            self.error = error
            self.confinement = confinement
            self.supervised = supervised
            self.whenEnded = whenEnded
        }
    }

    /// How a process ended.
    public enum Exit: Sendable, Hashable, CustomStringConvertible {
        /// It exited with this code.
        case exited(Int32)
        /// A signal ended it.
        case signaled(Int32)

        /// `exited with status 3`, `killed by signal 9`.
        public var description: String {
            switch self {
            case .exited(let code): return "exited with status \(code)"
            case .signaled(let signal): return "killed by signal \(signal)"
            }
        }
    }

    private struct State {
        /// Set once the child has ended and before it is reaped: from then on its pid is not signalled (it may be
        /// reused once reaped).
        var ending = false
        var exit: Exit?
        var waiters: [CheckedContinuation<Exit, Never>] = []
    }

    /// The process id: the command's, or its supervisor's (also the process group's id).
    public let pid: Int32
    /// Whether it runs under a supervisor in a group of its own.
    public let supervised: Bool
    private let state = Mutex(State())

    private init(pid: Int32, supervised: Bool) {
        self.pid = pid
        self.supervised = supervised
    }

    /// Starts `request`; returns once the command has been executed.
    /// - Throws: ``ChildProcessError`` naming the program, the step that failed and its `errno`.
    public static func spawn(_ request: Request) throws(ChildProcessError) -> ChildProcess {
        let executable = request.executable
        var null: Int32 = -1
        if request.input == nil || request.output == nil || request.error == nil {
            null = open("/dev/null", O_RDWR | O_CLOEXEC)
            guard null >= 0 else { throw ChildProcessError(executable: executable, stage: .pipe, errno: errno) }
        }
        defer { if null >= 0 { close(null) } }
        var directory: Int32 = -1
        var openedDirectory = false
        switch request.directory {
        case .inherited: break
        case .descriptor(let descriptor): directory = descriptor
        case .path(let path):
            directory = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard directory >= 0 else { throw ChildProcessError(executable: executable, stage: .directory, errno: errno) }
            openedDirectory = true
        }
        defer { if openedDirectory { close(directory) } }
        let argv = ([executable] + request.arguments).map { strdup($0) } + [nil]
        let envp = request.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        var stage: Int32 = 0
        var code: Int32 = 0
        let result = executable.withCString { path in
            argv.withUnsafeBufferPointer { argvBuffer in
                envp.withUnsafeBufferPointer { envpBuffer in
                    var spawn = cpr_spawn_request(
                        path: path, argv: argvBuffer.baseAddress, envp: envpBuffer.baseAddress, directory: directory,
                        input: request.input ?? null, output: request.output ?? null, error: request.error ?? null,
                        ruleset: request.confinement?.rulesetDescriptor ?? -1, no_new_privs: request.confinement == nil ? 0 : 1,
                        supervised: request.supervised ? 1 : 0)
                    return withExtendedLifetime(request.confinement) { cpr_spawn(&spawn, &pid, &stage, &code) }
                }
            }
        }
        guard result == 0 else { throw ChildProcessError(executable: executable, stage: Self.stage(stage), errno: code) }
        let process = ChildProcess(pid: pid, supervised: request.supervised)
        process.startReaping(whenEnded: request.whenEnded)
        return process
    }

    /// How the command ended, once it has.
    public var exit: Exit? { state.withLock { $0.exit } }

    /// Waits until the command has ended.
    ///
    /// Not cut short by cancellation: a killed process still has to go.
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

    /// SIGTERM: to the command, or to its supervisor, which passes it on (the command may end gracefully, and the
    /// supervisor then ends as it did).
    ///
    /// Nothing once it has ended.
    public func terminate() {
        signal(SIGTERM, group: false)
    }

    /// SIGKILL: to the command (nothing once it has ended), or, supervised, to its whole process group (the
    /// supervisor, the command and the children that stayed in the group, even once the supervisor has ended: the
    /// group's id is not reused while any member lives).
    public func kill() {
        signal(SIGKILL, group: supervised)
    }

    /// Sends `number` to the group, or to the pid while it is still this child's: the reaper marks the end under the
    /// same lock before it reaps, so a reused pid is never signalled.
    private func signal(_ number: Int32, group: Bool) {
        let pid = self.pid
        state.withLock { state in
            guard group || !state.ending else { return }
            _ = sendSignal(group ? -pid : pid, number)
        }
    }

    /// Waits for the end on a thread of its own (waitid/waitpid block), then tells the waiters.
    private func startReaping(whenEnded: (@Sendable () -> Void)?) {
        let pid = self.pid
        let thread = Thread { [self] in
            var info = siginfo_t()
            var waited: Int32
            repeat { waited = waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) } while waited < 0 && errno == EINTR
            state.withLock { $0.ending = true }
            var status: Int32 = 0
            var result: pid_t
            repeat { result = waitpid(pid, &status, 0) } while result < 0 && errno == EINTR
            let exit: Exit = result < 0 ? .exited(127) : (status & 0x7f == 0 ? .exited((status >> 8) & 0xff) : .signaled(status & 0x7f))
            whenEnded?()
            let waiters = state.withLock { state -> [CheckedContinuation<Exit, Never>] in
                state.exit = exit
                defer { state.waiters.removeAll() }
                return state.waiters
            }
            for waiter in waiters { waiter.resume(returning: exit) }
        }
        thread.name = "oa-bridge child \(pid)"
        thread.stackSize = 64 << 10
        thread.start()
    }

    private static func stage(_ stage: Int32) -> ChildProcessError.Stage {
        switch UInt32(bitPattern: stage) {
        case CPR_STAGE_PIPE.rawValue: return .pipe
        case CPR_STAGE_FORK.rawValue: return .fork
        case CPR_STAGE_PARENT_GONE.rawValue: return .parentGone
        case CPR_STAGE_CHDIR.rawValue: return .directory
        case CPR_STAGE_NO_NEW_PRIVS.rawValue: return .noNewPrivileges
        case CPR_STAGE_LANDLOCK.rawValue: return .landlock
        case CPR_STAGE_EXEC.rawValue: return .exec
        default: return .unsupported
        }
    }
}

// kill(2) under a name the type's own `kill()` does not hide.
private func sendSignal(_ pid: Int32, _ signal: Int32) -> Int32 { kill(pid, signal) }
