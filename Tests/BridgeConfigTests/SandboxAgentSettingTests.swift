import BridgeConfig
import BridgeServer
import Foundation
import Logging
import Testing

/// `--sandbox-agent` / `sandbox-agent: true` / `OA_BRIDGE_SANDBOX_AGENT`, and `--sandbox-agent-write` (a list).
@Suite("serve settings: the agent's sandbox", .tags(.unit))
struct SandboxAgentSettingTests {
    private func resolve(_ change: (inout ServeFlags) -> Void = { _ in }, file text: String? = nil, environment: [String: String] = [:]) throws -> ServeSettings {
        var flags = ServeFlags()
        change(&flags)
        if let text {
            let path = NSTemporaryDirectory() + "oa-config-\(UUID().uuidString.prefix(8)).yaml"
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            flags.config = path
        }
        return try ServeSettings.resolve(flags, environment: environment.merging(["HOME": "/nonexistent"]) { mine, _ in mine })
    }

    @Test("off by default; on from the flag, the environment or the config file, each saying where it came from")
    func sources() throws {
        let byDefault = try resolve()
        #expect(!byDefault.sandboxAgent.value && byDefault.sandboxAgent.source == "default")
        #expect(byDefault.sandboxAgentWrite.value.isEmpty)
        let flag = try resolve {
            $0.sandboxAgent = true
            $0.sandboxAgentWrite = ["/a", "/b"]
        }
        #expect(flag.sandboxAgent.value && flag.sandboxAgent.source == "--sandbox-agent")
        #expect(flag.sandboxAgentWrite.value == ["/a", "/b"] && flag.sandboxAgentWrite.source == "--sandbox-agent-write")
        let environment = try resolve(environment: ["OA_BRIDGE_SANDBOX_AGENT": "yes", "OA_BRIDGE_SANDBOX_AGENT_WRITE": "/x, /y"])
        #expect(environment.sandboxAgent.value && environment.sandboxAgent.source == "OA_BRIDGE_SANDBOX_AGENT")
        #expect(environment.sandboxAgentWrite.value == ["/x", "/y"])
        let file = try resolve(file: "sandbox-agent: true\nsandbox-agent-write: /state\n")
        #expect(file.sandboxAgent.value && file.sandboxAgent.source == file.configPath)
        #expect(file.rows.contains { $0.key == "sandbox-agent" && $0.value == "true" })
        #expect(file.rows.contains { $0.key == "sandbox-agent-write" && $0.value == "/state" })
        #expect(throws: ConfigError.self) { try resolve(file: "sandbox-agent: maybe\n") }
    }

    @Test("it reaches the server configuration")
    func reachesConfiguration() throws {
        let on = try resolve {
            $0.sandboxAgent = true
            $0.sandboxAgentWrite = ["/state"]
        }.serviceOptions(version: "1", logger: Logger(label: "test"))
        #expect(on.configuration.sandboxAgent && on.configuration.sandboxAgentWritable == ["/state"])
        let off = try resolve().serviceOptions(version: "1", logger: Logger(label: "test"))
        #expect(!off.configuration.sandboxAgent && off.configuration.sandboxAgentWritable.isEmpty)
    }
}
