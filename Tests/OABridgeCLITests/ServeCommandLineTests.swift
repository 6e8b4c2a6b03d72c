import ArgumentParser
import BridgeConfig
import Foundation
import Testing
@testable import oa_bridge

@Suite("serve's command line", .tags(.unit))
struct ServeCommandLineTests {
    @Test("serve's options become the flags the settings are resolved from")
    func flags() throws {
        let options = try ServeOptions.parse(["--config", "/c.yaml", "--port", "9300", "--backend", "off", "--auth", "none", "--allow-network", "10.0.0.0/8", "--no-allow-plaintext", "--log-format", "json"])
        let flags = options.flags
        #expect(flags.config == "/c.yaml" && flags.port == 9300 && flags.discovery == .off && flags.auth == AuthMode.none)
        #expect(flags.allowNetwork == ["10.0.0.0/8"] && flags.allowPlaintext == false && flags.logFormat == .json)
        #expect(try ServeOptions.parse([]).flags.port == nil)
    }
}
