import ArgumentParser
import BridgeConfig
import Testing
@testable import oa_bridge

@Suite("serve's retention options", .tags(.unit))
struct RetentionFlagTests {
    @Test("--max-idle-sessions, --max-idle-replay-bytes and --idle-session-timeout (with units) become the flags")
    func flags() throws {
        let flags = try ServeOptions.parse(["--max-idle-sessions", "1000000", "--max-idle-replay-bytes", "1048576", "--idle-session-timeout", "2h"]).flags
        #expect(flags.maxIdleSessions == 1_000_000 && flags.maxIdleReplayBytes == 1 << 20 && flags.idleSessionTimeout == 7_200)
        #expect(try ServeOptions.parse(["--idle-session-timeout", "off"]).flags.idleSessionTimeout == 0)
        let none = try ServeOptions.parse([]).flags
        #expect(none.maxIdleSessions == nil && none.maxIdleReplayBytes == nil && none.idleSessionTimeout == nil)
    }

    @Test("a timeout that does not parse is refused")
    func badTimeout() {
        #expect(throws: (any Error).self) { try ServeOptions.parse(["--idle-session-timeout", "soon"]) }
    }
}
