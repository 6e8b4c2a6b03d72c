/// How a terminal's command is confined (see ``TerminalSettings/confinement``).
public enum TerminalConfinement: String, Sendable, CaseIterable {
    /// Under a Landlock ruleset: reads of the session's directories, the `--fs-scope` directory and the system's,
    /// writes of the first two only, never the bridge's own files; refused where the kernel has no Landlock.
    case landlock
    /// As the bridge's user, with no confinement (`--terminal-confinement unconfined`); still started from the directory's
    /// descriptor and killed with the bridge.
    case unconfined
}
