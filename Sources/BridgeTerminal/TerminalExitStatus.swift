package import BridgeRPC

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How a terminal's command ended (ACP's `TerminalExitStatus`): an exit code, or the signal that killed it.
package struct TerminalExitStatus: Sendable, Equatable {
    /// The exit code, when the process exited.
    var exitCode: Int32?
    /// The signal's name (`SIGKILL`), when a signal ended it.
    var signal: String?

    /// The process exited with `code`.
    static func exited(_ code: Int32) -> TerminalExitStatus {
        TerminalExitStatus(exitCode: code, signal: nil)
    }

    /// Signal `number` ended the process.
    static func killed(by number: Int32) -> TerminalExitStatus {
        TerminalExitStatus(exitCode: nil, signal: signalName(number))
    }

    /// `{"exitCode": …, "signal": …}`, official spelling (`null` for the one that does not apply).
    package var jsonValue: JSONValue {
        ["exitCode": exitCode.map { .int(Int64($0)) } ?? .null, "signal": signal.map(JSONValue.string) ?? .null]
    }

    /// `SIGKILL` for 9, …; `SIG<number>` for a signal without a common name.
    static func signalName(_ number: Int32) -> String {
        let names: [Int32: String] = [
            SIGHUP: "SIGHUP", SIGINT: "SIGINT", SIGQUIT: "SIGQUIT", SIGILL: "SIGILL", SIGTRAP: "SIGTRAP", SIGABRT: "SIGABRT",
            SIGBUS: "SIGBUS", SIGFPE: "SIGFPE", SIGKILL: "SIGKILL", SIGUSR1: "SIGUSR1", SIGSEGV: "SIGSEGV", SIGUSR2: "SIGUSR2",
            SIGPIPE: "SIGPIPE", SIGALRM: "SIGALRM", SIGTERM: "SIGTERM", SIGXCPU: "SIGXCPU", SIGXFSZ: "SIGXFSZ",
        ]
        return names[number] ?? "SIG\(number)"
    }
}
