import ArgumentParser
import Foundation
import Testing
@testable import oa_bridge

@Suite("serve settings: flags, then OA_BRIDGE_* variables, then the config file, then defaults", .tags(.unit))
struct ServeSettingsTests {
    func file(_ text: String) throws -> String {
        let path = NSTemporaryDirectory() + "oa-config-\(UUID().uuidString.prefix(8)).yaml"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test("each source wins over the ones after it, and says where it came from")
    func precedence() throws {
        let path = try file("port: 9200\nname: FromFile\nhost: 10.0.0.1\nagent: [gemini, --acp]\nagent-env:\n  KEY: v\n")
        let options = try ServeOptions.parse(["--config", path, "--port", "9300"])
        let settings = try ServeSettings.resolve(options, environment: ["OA_BRIDGE_NAME": "FromEnv", "HOME": "/nonexistent"])
        #expect(settings.port.value == 9300 && settings.port.source == "--port")
        #expect(settings.name.value == "FromEnv" && settings.name.source == "OA_BRIDGE_NAME")
        #expect(settings.host.value == "10.0.0.1" && settings.host.source == path)
        #expect(settings.agent.value == "gemini --acp")
        #expect(settings.agentEnv.value == ["KEY": "v"])
        #expect(settings.maxFrameSize.value == 1 << 20 && settings.maxFrameSize.source == "default")
        #expect(settings.auth.value == .token)
    }

    @Test("a bad value names the key, the value, its source and what is expected")
    func badValue() throws {
        let options = try ServeOptions.parse([])
        #expect(throws: ConfigError.self) {
            try ServeSettings.resolve(options, environment: ["OA_BRIDGE_PORT": "99999", "HOME": "/nonexistent"])
        }
        do {
            _ = try ServeSettings.resolve(options, environment: ["OA_BRIDGE_REQUIRE_APPROVAL": "maybe", "HOME": "/nonexistent"])
            Issue.record("expected an error")
        } catch {
            let text = "\(error)"
            #expect(text.contains("require-approval") && text.contains("maybe") && text.contains("OA_BRIDGE_REQUIRE_APPROVAL") && text.contains("true or false"))
        }
    }

    @Test("unknown keys in the config file are refused with the list of known keys")
    func unknownKey() throws {
        let path = try file("prot: 1\n")
        let options = try ServeOptions.parse(["--config", path])
        do {
            _ = try ServeSettings.resolve(options, environment: ["HOME": "/nonexistent"])
            Issue.record("expected an error")
        } catch {
            #expect("\(error)".contains("unknown key 'prot'"))
            #expect("\(error)".contains("max-frame-size"))
        }
    }

    @Test("--config must exist; the default location may be absent")
    func missingFile() throws {
        #expect(throws: ConfigError.self) {
            try ServeSettings.resolve(try ServeOptions.parse(["--config", "/nonexistent/c.yaml"]), environment: [:])
        }
        let settings = try ServeSettings.resolve(try ServeOptions.parse([]), environment: ["HOME": "/nonexistent"])
        #expect(!settings.configExists)
        #expect(settings.configPath == "/nonexistent/.config/oa-bridge/config.yaml")
    }

    @Test("environment names are OA_BRIDGE_ and the option in upper snake case")
    func environmentNames() {
        #expect(ServeSettings.environmentName("max-frame-size") == "OA_BRIDGE_MAX_FRAME_SIZE")
        #expect(ServeSettings.environmentName("port") == "OA_BRIDGE_PORT")
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
