public import BridgeSandbox

extension DoctorCheck {
    /// Whether the kernel can confine the agent's terminals and, with `sandbox-agent: true`, the agent (Landlock, ABI
    /// `Landlock/minimumABI` or later): without it `serve` turns terminals off (the agent is told `terminal: false`)
    /// unless its `terminal-confinement` is `unconfined`, and does not start an agent it was told to sandbox.
    ///
    /// The details name settings by their config keys, never a flag (issue 31 item 5). `probe` replaces the kernel's
    /// answer (tests).
    public static func terminalConfinement(probe: () -> Result<Int, SandboxError> = Landlock.abi) -> DoctorCheck {
        let name = "terminal confinement"
        switch Landlock.usableABI(probe: probe) {
        case .success(let abi):
            return DoctorCheck(
                name: name, status: .ok, detail: "Landlock ABI \(abi): terminals (and the agent, with sandbox-agent: true) run confined to the file scope (fs-scope)")
        case .failure(let error):
            return DoctorCheck(
                name: name, status: .warn,
                detail: "\(error.description); serve turns the agent's terminals off (the agent is told terminal: false) and cannot "
                    + "start an agent with sandbox-agent: true",
                fix: "a kernel with Landlock ABI \(Landlock.minimumABI) or later (Linux 6.2+, lsm=...,landlock), or let serve run "
                    + "terminals unconfined, or turn them off",
                setting: .terminalConfinement)
        }
    }
}
