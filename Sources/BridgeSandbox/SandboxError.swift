#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why the sandbox could not be set up (a command that cannot start is BridgeProcess's `ChildProcessError`).
///
/// Matched by case; ``description`` says what to do.
public enum SandboxError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The kernel offers no Landlock (older than 5.13, or the LSM is not enabled: `lsm=` on the kernel command line).
    case landlockUnavailable(errno: Int32)
    /// The kernel's Landlock ABI is older than the bridge needs (``Landlock/minimumABI``).
    case landlockTooOld(abi: Int, minimum: Int)
    /// A Landlock call failed (`operation`, `errno`), for the path named.
    case landlock(operation: String, path: String, errno: Int32)
    /// A directory or file of the policy could not be opened or inspected.
    case unreadable(path: String, errno: Int32)
    /// One of the bridge's own files could not be found or created to be protected.
    case unprotectable(path: String, errno: Int32)

    /// What went wrong, with the system's reason.
    public var description: String {
        switch self {
        case .landlockUnavailable(let code):
            return "the kernel offers no Landlock (\(Self.reason(code))): Linux 6.2 or later with landlock in its lsm= list is needed "
                + "to confine terminals and the agent"
        case .landlockTooOld(let abi, let minimum):
            return "the kernel's Landlock ABI is \(abi), older than the \(minimum) needed (Linux 6.2 or later: older ABIs cannot stop a "
                + "confined process from truncating the bridge's own files)"
        case .landlock(let operation, let path, let code):
            return "Landlock \(operation) failed for \(path): \(Self.reason(code))"
        case .unreadable(let path, let code):
            return "cannot open \(path) for the sandbox: \(Self.reason(code))"
        case .unprotectable(let path, let code):
            return "cannot protect the bridge's own file \(path): \(Self.reason(code))"
        }
    }

    static func reason(_ code: Int32) -> String { String(cString: strerror(code)) }
}
