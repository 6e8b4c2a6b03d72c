import BridgeDiagnostics
import BridgeSandbox
import Testing

@Suite("Doctor: terminal confinement", .tags(.unit))
struct TerminalConfinementCheckTests {
    @Test("a kernel without Landlock, or with an ABI older than 3, is a warning that says terminals are off and how to fix it")
    func warnsWithoutLandlock() {
        for probe: () -> Result<Int, SandboxError> in [{ .failure(.landlockUnavailable(errno: 38)) }, { .success(2) }] {
            let check = DoctorCheck.terminalConfinement(probe: probe)
            #expect(check.status == .warn)
            #expect(check.detail.contains("terminal: false"), "\(check.detail)")
            #expect(check.setting == .terminalConfinement && check.fix?.contains("unconfined") == true)
            #expect(check.fix?.contains("--") == false, "the command line names the flag: \(check.fix ?? "")")
            #expect(!check.detail.contains("--") && check.detail.contains("sandbox-agent: true"), "settings by their keys: \(check.detail)")
        }
    }

    @Test("Landlock ABI 3 or later is fine, and the check names the ABI")
    func okWithLandlock() {
        let check = DoctorCheck.terminalConfinement(probe: { .success(7) })
        #expect(check.status == .ok)
        #expect(check.detail.contains("ABI 7"))
        // Issue 31 item 5: the settings by their config keys, no flag.
        #expect(check.detail.hasSuffix("terminals (and the agent, with sandbox-agent: true) run confined to the file scope (fs-scope)"), "\(check.detail)")
    }
}
