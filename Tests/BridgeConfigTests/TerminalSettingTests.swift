import BridgeConfig
import BridgeServer
import BridgeTerminal
import Foundation
import Logging
import Testing

/// `--no-terminal` / `terminal: false` / `OA_BRIDGE_TERMINAL`: whether the agent's `terminal/*` requests are served.
@Suite("serve settings: the terminal switch", .tags(.unit))
struct TerminalSettingTests {
    private func resolve(_ flag: Bool? = nil, file text: String? = nil, environment: [String: String] = [:]) throws -> ServeSettings {
        var flags = ServeFlags()
        flags.terminal = flag
        if let text {
            let path = NSTemporaryDirectory() + "oa-config-\(UUID().uuidString.prefix(8)).yaml"
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            flags.config = path
        }
        return try ServeSettings.resolve(flags, environment: environment.merging(["HOME": "/nonexistent"]) { mine, _ in mine })
    }

    @Test("on by default; off from the flag, the environment or the config file, each saying where it came from")
    func sources() throws {
        let byDefault = try resolve()
        #expect(byDefault.terminal.value && byDefault.terminal.source == "default")
        let flag = try resolve(false)
        #expect(!flag.terminal.value && flag.terminal.source == "--terminal")
        let environment = try resolve(environment: ["OA_BRIDGE_TERMINAL": "off"])
        #expect(!environment.terminal.value && environment.terminal.source == "OA_BRIDGE_TERMINAL")
        let file = try resolve(file: "terminal: false\n")
        #expect(!file.terminal.value && file.terminal.source == file.configPath)
        #expect(file.rows.contains { $0.key == "terminal" && $0.value == "false" })
        #expect(throws: ConfigError.self) { try resolve(file: "terminal: maybe\n") }
    }

    @Test("it reaches the server configuration")
    func reachesConfiguration() throws {
        let off = try resolve(false).serviceOptions(version: "1", logger: Logger(label: "test"))
        #expect(off.configuration.terminal.enabled == false)
        let on = try resolve().serviceOptions(version: "1", logger: Logger(label: "test"))
        #expect(on.configuration.terminal.enabled == true)
    }
}
