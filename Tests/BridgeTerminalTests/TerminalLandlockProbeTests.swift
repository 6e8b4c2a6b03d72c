import BridgeSandbox
import BridgeTestKit
import Logging
import Testing

@testable import BridgeTerminal

@Suite("TerminalHost without Landlock", .tags(.unit))
struct TerminalLandlockProbeTests {
    private func host(_ probe: @escaping @Sendable () -> Result<Int, SandboxError>, confinement: TerminalConfinement = .landlock, enabled: Bool = true) -> TerminalHost {
        var settings = TerminalSettings()
        settings.enabled = enabled
        settings.confinement = confinement
        settings.landlockProbe = probe
        return TerminalHost(settings: settings, clock: ManualClock(), logger: Logger(label: "test.terminal"))
    }

    @Test("no Landlock, or an ABI older than 3: terminals are off (the agent is told so) and the host says why")
    func offWithoutLandlock() {
        let none = host { .failure(.landlockUnavailable(errno: 38)) }
        #expect(!none.settings.enabled)
        #expect(none.unavailable == .landlockUnavailable(errno: 38))
        let old = host { .success(2) }
        #expect(!old.settings.enabled)
        #expect(old.unavailable == .landlockTooOld(abi: 2, minimum: 3))
    }

    @Test("with Landlock ABI 3 or later, or confinement unconfined, or terminals turned off by hand, nothing changes")
    func otherwiseUnchanged() {
        let confined = host { .success(3) }
        #expect(confined.settings.enabled && confined.unavailable == nil)
        let unconfined = host({ .failure(.landlockUnavailable(errno: 38)) }, confinement: .unconfined)
        #expect(unconfined.settings.enabled && unconfined.unavailable == nil)
        let off = host({ .failure(.landlockUnavailable(errno: 38)) }, enabled: false)
        #expect(!off.settings.enabled && off.unavailable == nil)
    }
}
