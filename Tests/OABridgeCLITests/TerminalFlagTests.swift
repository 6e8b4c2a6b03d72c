import ArgumentParser
import BridgeConfig
import Testing
@testable import oa_bridge

@Suite("serve's --terminal / --no-terminal", .tags(.unit))
struct TerminalFlagTests {
    @Test("--no-terminal and --terminal become the terminal flag; absent, nothing is given")
    func flag() throws {
        #expect(try ServeOptions.parse(["--no-terminal"]).flags.terminal == false)
        #expect(try ServeOptions.parse(["--terminal"]).flags.terminal == true)
        #expect(try ServeOptions.parse([]).flags.terminal == nil)
    }
}
