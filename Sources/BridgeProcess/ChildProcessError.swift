#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a child process could not be started: the program, the step that failed and the system's `errno`, so a caller
/// matches the cause (`errno == ENOENT`, `stage == .exec`) and a person reads it (``description``).
public struct ChildProcessError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The step of a spawn that failed.
    public enum Stage: String, Hashable, Sendable {
        /// Making a pipe, opening `/dev/null`, or moving a descriptor into place.
        case pipe
        /// fork(2).
        case fork
        /// The bridge's process was gone before the supervisor started.
        case parentGone = "parent gone"
        /// Opening or entering the working directory.
        case directory
        /// `PR_SET_NO_NEW_PRIVS`.
        case noNewPrivileges = "no_new_privs"
        /// Restricting the child to its Landlock ruleset.
        case landlock
        /// execve(2): the program is missing, not executable, or not a program.
        case exec
        /// This platform has no such spawn.
        case unsupported = "unsupported platform"
    }

    /// The program that was to run.
    public var executable: String
    /// Where it failed.
    public var stage: Stage
    /// The system's error number.
    public var errno: Int32

    /// An error of its parts.
    public init(executable: String, stage: Stage, errno: Int32) {
        self.executable = executable
        self.stage = stage
        self.errno = errno
    }

    /// `cannot start /usr/bin/agent: Permission denied (exec, errno 13)`.
    public var description: String {
        let reason = String(cString: strerror(errno))
        switch stage {
        case .exec: return "cannot start \(executable): \(reason) (exec, errno \(errno))"
        case .directory: return "cannot enter the working directory of \(executable): \(reason) (errno \(errno))"
        default: return "cannot start \(executable): \(stage.rawValue) failed: \(reason) (errno \(errno))"
        }
    }
}
