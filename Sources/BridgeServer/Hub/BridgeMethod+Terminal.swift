/// The notification of the agent's terminals (see ``TerminalHost``).
extension BridgeMethod {
    /// Notification to the phones attached to a session: a terminal's new output (`sessionId`, `terminalId`,
    /// `output`; `skippedBytes` when output came faster than it is sent; `exitStatus` `{exitCode, signal}` in the
    /// last one).
    ///
    /// At most one per terminal per 100 ms; not sequenced, not replayed.
    public static let terminalOutput = "_oa/terminal/output"
}
