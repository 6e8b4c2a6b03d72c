import BridgeSandbox

extension DoctorCheck {
    /// Whether the kernel can confine the agent's terminals (Landlock): without it `serve` refuses terminals unless
    /// started with `--terminal-confinement unconfined`.
    public static func terminalConfinement() -> DoctorCheck {
        let name = "terminal confinement"
        switch Landlock.abi() {
        case .success(let abi):
            return DoctorCheck(name: name, status: .ok, detail: "Landlock ABI \(abi): terminals run confined to --fs-scope")
        case .failure(let error):
            return DoctorCheck(
                name: name, status: .warn, detail: "\(error.description); serve refuses the agent's terminals",
                fix: "a kernel with Landlock (Linux 5.13+, lsm=...,landlock), or 'oa-bridge serve --terminal-confinement unconfined' "
                    + "to run them unconfined, or --no-terminal")
        }
    }
}
