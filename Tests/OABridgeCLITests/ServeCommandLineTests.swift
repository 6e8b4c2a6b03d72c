import ArgumentParser
import BridgeConfig
import Foundation
import Testing
@testable import oa_bridge

@Suite("serve's command line: options, agent command lines, the systemd unit", .tags(.unit))
struct ServeCommandLineTests {
    @Test("serve's options become the flags the settings are resolved from")
    func flags() throws {
        let options = try ServeOptions.parse(["--config", "/c.yaml", "--port", "9300", "--backend", "off", "--auth", "none", "--allow-network", "10.0.0.0/8", "--no-allow-plaintext", "--log-format", "json"])
        let flags = options.flags
        #expect(flags.config == "/c.yaml" && flags.port == 9300 && flags.discovery == .off && flags.auth == AuthMode.none)
        #expect(flags.allowNetwork == ["10.0.0.0/8"] && flags.allowPlaintext == false && flags.logFormat == .json)
        #expect(try ServeOptions.parse([]).flags.port == nil)
    }

    @Test("agent command lines split like a shell", arguments: [
        ("gemini --acp", ["gemini", "--acp"]),
        ("'my agent' --flag=\"a b\"", ["my agent", "--flag=a b"]),
        ("a\\ b c", ["a b", "c"]),
        ("  spaced   out  ", ["spaced", "out"]),
    ])
    func splitting(line: String, words: [String]) throws {
        #expect(try CommandLineSplitter.split(line) == words)
    }

    @Test("unterminated quotes are an error")
    func badQuotes() {
        #expect(throws: ServeError.self) { try CommandLineSplitter.split("'open") }
    }

    @Test("the systemd unit runs serve with the given options, quoted for systemd")
    func unit() {
        let unit = InstallServiceCommand.unit(executable: "/usr/local/bin/oa-bridge", serveArguments: ["--name", "My Desk", "--agent", "x $HOME"])
        #expect(unit.contains(#"ExecStart=/usr/local/bin/oa-bridge serve --name "My Desk" --agent "x $$HOME""#))
        #expect(unit.contains("Restart=on-failure"))
        #expect(unit.contains("WantedBy=default.target"))
    }
}
