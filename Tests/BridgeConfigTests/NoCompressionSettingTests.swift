import BridgeConfig
import BridgeServer
import Foundation
import Logging
import Testing

/// `--no-compression` / `no-compression: true` / `OA_BRIDGE_NO_COMPRESSION` (issue 32 goal 5): permessage-deflate is
/// negotiated by default and declined with any of them.
@Suite("serve settings: permessage-deflate", .tags(.unit))
struct NoCompressionSettingTests {
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

    @Test("compression by default; declined from the flag, the environment or the config file, each saying where it came from")
    func sources() throws {
        let byDefault = try resolve()
        #expect(!byDefault.noCompression.value && byDefault.noCompression.source == "default")
        let flag = try resolve { $0.noCompression = true }
        #expect(flag.noCompression.value && flag.noCompression.source == "--no-compression")
        let environment = try resolve(environment: ["OA_BRIDGE_NO_COMPRESSION": "true"])
        #expect(environment.noCompression.value && environment.noCompression.source == "OA_BRIDGE_NO_COMPRESSION")
        let file = try resolve(file: "no-compression: true\n")
        #expect(file.noCompression.value && file.noCompression.source == file.configPath)
        #expect(file.rows.contains { $0.key == "no-compression" && $0.value == "true" })
        #expect(throws: ConfigError.self) { try resolve(file: "no-compression: sometimes\n") }
    }

    @Test("it reaches the server configuration")
    func reachesConfiguration() throws {
        #expect(try resolve().serviceOptions(version: "1", logger: Logger(label: "test")).configuration.compression)
        #expect(try !resolve { $0.noCompression = true }.serviceOptions(version: "1", logger: Logger(label: "test")).configuration.compression)
    }
}
