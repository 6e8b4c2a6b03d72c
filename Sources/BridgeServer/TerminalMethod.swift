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

extension BridgeMethod {
    /// Notification to the phones attached to a session: a terminal's new output (`sessionId`, `terminalId`,
    /// `output`; `skippedBytes` when output came faster than it is sent; `exitStatus` `{exitCode, signal}` in the
    /// last one). At most one per terminal per 100 ms; not sequenced, not replayed.
    public static let terminalOutput = "_oa/terminal/output"
}
