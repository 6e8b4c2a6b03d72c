public import BridgeSandbox

/// How the bridge serves the agent's `terminal/*` requests on the desktop (see Protocol.md, "Terminals").
public struct TerminalSettings: Sendable {
    /// Whether terminals are served (`oa-bridge serve --no-terminal` / `terminal: false` turns them off): the agent is
    /// told `clientCapabilities.terminal` accordingly, and with them off every `terminal/*` request is refused.
    public var enabled: Bool = true
    /// How commands are confined: under Landlock to the session's directories and `--fs-scope` (the default; where
    /// the kernel has no Landlock, terminals are refused), or not at all (`--terminal-confinement unconfined`).
    public var confinement: TerminalConfinement = .landlock
    /// The most terminals one session may hold at once (created and not yet released).
    public var maxPerSession: Int = 8
    /// The most terminals all sessions together may hold at once.
    public var maxTotal: Int = 32
    /// The most output bytes kept for one terminal, whatever `outputByteLimit` the agent asks for (and the limit when
    /// it gives none); older output goes first, at a character boundary.
    public var maxOutputBytes: Int = 1 << 20
    /// At most one `_oa/terminal/output` notification per terminal per interval: output that comes faster is
    /// gathered into the next one.
    public var notificationInterval: Duration = .milliseconds(100)
    /// The most bytes of output one `_oa/terminal/output` notification carries; output beyond it within one interval
    /// is left out (oldest first) and counted in the notification's `skippedBytes`.
    public var maxNotificationBytes: Int = 32 << 10
    /// How long the output of a command that has exited is still read (a background child may keep it open) before
    /// `terminal/wait_for_exit` is answered without it.
    public var outputGrace: Duration = .seconds(1)

    /// How the kernel's Landlock ABI is learnt (`Landlock/abi()`); tests give a kernel without Landlock, or with an old
    /// one.
    ///
    /// Under ``TerminalConfinement/landlock``, an ABI older than `Landlock/minimumABI` or none turns terminals off (see
    /// `TerminalHost/settings`).
    public var landlockProbe: @Sendable () -> Result<Int, SandboxError> = { Landlock.abi() }

    /// The defaults: served, 8 per session, 32 in all, 1 MiB of output each, one notification per 100 ms of at most
    /// 32 KiB.
    public init() {}
}
