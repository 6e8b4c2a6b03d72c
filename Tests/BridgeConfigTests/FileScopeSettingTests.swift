import BridgeConfig
import BridgeServer
import BridgeWorkspace
import Foundation
import Logging
import Testing

/// `--fs-scope` / `fs-scope:` / `OA_BRIDGE_FS_SCOPE`: how far the agent's file requests reach.
@Suite("serve settings: --fs-scope", .tags(.unit))
struct FileScopeSettingTests {
    private func resolve(_ flag: WorkspaceScope? = nil, file text: String? = nil, environment: [String: String] = [:]) throws -> ServeSettings {
        var flags = ServeFlags()
        flags.fsScope = flag
        if let text {
            let path = NSTemporaryDirectory() + "oa-config-\(UUID().uuidString.prefix(8)).yaml"
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            flags.config = path
        }
        return try ServeSettings.resolve(flags, environment: environment.merging(["HOME": "/nonexistent"]) { mine, _ in mine })
    }

    @Test("workspace by default; home or any from the flag, the environment or the config file, each saying where it came from")
    func sources() throws {
        let byDefault = try resolve()
        #expect(byDefault.fsScope.value == .workspace && byDefault.fsScope.source == "default")
        #expect(byDefault.rows.contains { $0.key == "fs-scope" && $0.value == "workspace" && $0.source == "default" })
        let flag = try resolve(.home)
        #expect(flag.fsScope.value == .home && flag.fsScope.source == "--fs-scope")
        let environment = try resolve(environment: ["OA_BRIDGE_FS_SCOPE": "any"])
        #expect(environment.fsScope.value == .any && environment.fsScope.source == "OA_BRIDGE_FS_SCOPE")
        let file = try resolve(file: "fs-scope: home\n")
        #expect(file.fsScope.value == .home && file.fsScope.source == file.configPath)
        #expect(file.rows.contains { $0.key == "fs-scope" && $0.value == "home" })
        #expect(throws: ConfigError.self) { try resolve(file: "fs-scope: everywhere\n") }
        #expect(throws: ConfigError.self) { try resolve(environment: ["OA_BRIDGE_FS_SCOPE": "/etc"]) }
    }

    @Test("it reaches the server configuration")
    func reachesConfiguration() throws {
        let any = try resolve(.any).serviceOptions(version: "1", logger: Logger(label: "test"))
        #expect(any.configuration.fileScope == .any)
        let byDefault = try resolve().serviceOptions(version: "1", logger: Logger(label: "test"))
        #expect(byDefault.configuration.fileScope == .workspace)
    }
}
