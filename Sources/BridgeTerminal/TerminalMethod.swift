/// The ACP `terminal/*` methods (agent → client), which the bridge serves on the desktop.
public enum TerminalMethod {
    /// Starts a command; answers `{terminalId}` at once.
    public static let create = "terminal/create"
    /// The output so far: `{output, truncated, exitStatus?}`.
    public static let output = "terminal/output"
    /// Waits for the command to end: `{exitCode, signal}`.
    public static let waitForExit = "terminal/wait_for_exit"
    /// Kills the command; the terminal stays until released.
    public static let kill = "terminal/kill"
    /// Kills the command if it still runs and forgets the terminal.
    public static let release = "terminal/release"

    /// Every one of them.
    public static let all: Set<String> = [create, output, waitForExit, kill, release]
}
