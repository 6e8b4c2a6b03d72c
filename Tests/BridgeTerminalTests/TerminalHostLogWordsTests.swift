import BridgeSandbox
import BridgeTestKit
import Logging
import Testing

@testable import BridgeTerminal

/// Issue 31 item 5: what the terminal host logs about confinement names the bridge's setting (in words and as the
/// `setting` metadata), never a flag of `oa-bridge serve` (the bridge may be started from a config file or an app).
@Suite("TerminalHost's log names the setting, not a flag", .tags(.unit))
struct TerminalHostLogWordsTests {
    /// The lines a host with `confinement` and Landlock `probe` logs while it starts.
    private func linesOfHost(confinement: TerminalConfinement, probe: @escaping @Sendable () -> Result<Int, SandboxError>)
        -> [TestLog.Entry]
    {
        let log = TestLog()
        let logger = log.logger(label: "test.terminal")
        var settings = TerminalSettings()
        settings.confinement = confinement
        settings.landlockProbe = probe
        _ = TerminalHost(settings: settings, clock: ManualClock(), logger: logger)
        return log.all
    }

    @Test("unconfined, and off for want of Landlock: the line and its fix say 'terminal confinement: unconfined', no flag")
    func confinementLines() throws {
        let unconfined = linesOfHost(confinement: .unconfined) { .success(3) }
        let off = linesOfHost(confinement: .landlock) { .failure(.landlockUnavailable(errno: 38)) }
        for lines in [unconfined, off] {
            let line = try #require(lines.first { $0.metadata["setting"] != nil })
            #expect(line.metadata["setting"] == "terminal-confinement")
            let words = line.message + " " + (line.metadata["fix"] ?? "")
            #expect(words.contains("terminal confinement: unconfined"), "\(words)")
            #expect(!words.contains(/--[a-z]/), "\(words)")
        }
    }
}
