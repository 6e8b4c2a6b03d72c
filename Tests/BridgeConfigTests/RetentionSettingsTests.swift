import BridgeConfig
import BridgeServer
import Foundation
import Logging
import Testing

/// The retention options of `serve` (issue 15 item 2): `--max-idle-sessions`, `--max-idle-replay-bytes` and
/// `--idle-session-timeout`, from flags, `OA_BRIDGE_*`, the config file and defaults, shown by `config show` and handed
/// to the server's ``SessionRetention``.
@Suite("serve settings: session retention", .tags(.unit))
struct RetentionSettingsTests {
    static let environment = ["HOME": "/nonexistent"]

    @Test("defaults: 64 idle sessions, 64 MiB of replay, 24 h; config show lists them")
    func defaults() throws {
        let settings = try ServeSettings.resolve(ServeFlags(), environment: Self.environment)
        #expect(settings.maxIdleSessions.value == 64 && settings.maxIdleSessions.source == "default")
        #expect(settings.maxIdleReplayBytes.value == 64 << 20)
        #expect(settings.idleSessionTimeout.value == 86_400)
        let rows = Dictionary(uniqueKeysWithValues: settings.rows.map { ($0.key, $0.value) })
        #expect(rows["max-idle-sessions"] == "64")
        #expect(rows["max-idle-replay-bytes"] == "67108864")
        #expect(rows["idle-session-timeout"] == "1d")
        let configuration = try settings.serviceOptions(version: "1", logger: Logger(label: "test")).configuration
        #expect(configuration.retention == SessionRetention())
    }

    @Test("flags, environment and config file each set them; the server gets them (0 or off: no time limit)")
    func sources() throws {
        let path = NSTemporaryDirectory() + "oa-config-\(UUID().uuidString.prefix(8)).yaml"
        try "max-idle-replay-bytes: 1048576\nidle-session-timeout: 30m\n".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        var flags = ServeFlags()
        flags.config = path
        flags.maxIdleSessions = 1_000_000
        var environment = Self.environment
        environment["OA_BRIDGE_IDLE_SESSION_TIMEOUT"] = "off"
        let settings = try ServeSettings.resolve(flags, environment: environment)
        #expect(settings.maxIdleSessions.value == 1_000_000 && settings.maxIdleSessions.source == "--max-idle-sessions")
        #expect(settings.maxIdleReplayBytes.value == 1 << 20 && settings.maxIdleReplayBytes.source == path)
        #expect(settings.idleSessionTimeout.value == 0 && settings.idleSessionTimeout.source == "OA_BRIDGE_IDLE_SESSION_TIMEOUT")
        let retention = try settings.serviceOptions(version: "1", logger: Logger(label: "test")).configuration.retention
        #expect(retention == SessionRetention(maxIdleSessions: 1_000_000, maxIdleReplayBytes: 1 << 20, idleTimeout: nil))

        let fromFile = try ServeSettings.resolve({
            var flags = ServeFlags()
            flags.config = path
            return flags
        }(), environment: Self.environment)
        #expect(fromFile.idleSessionTimeout.value == 1_800)
        #expect(fromFile.rows.first { $0.key == "idle-session-timeout" }?.value == "30m")
        #expect(try fromFile.serviceOptions(version: "1", logger: Logger(label: "test")).configuration.retention.idleTimeout == .seconds(1_800))
    }

    @Test("a value that does not parse names the key and what is expected")
    func badValues() throws {
        #expect(throws: ConfigError.self) {
            try ServeSettings.resolve(ServeFlags(), environment: ["HOME": "/nonexistent", "OA_BRIDGE_MAX_IDLE_SESSIONS": "-1"])
        }
        do {
            _ = try ServeSettings.resolve(ServeFlags(), environment: ["HOME": "/nonexistent", "OA_BRIDGE_IDLE_SESSION_TIMEOUT": "soon"])
            Issue.record("a bad timeout was accepted")
        } catch {
            guard case .badValue(let key, let value, _, _) = error else {
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(key == "idle-session-timeout" && value == "soon")
        }
    }

    @Test("durations: seconds, s, m, h, d; 0, off and never for no limit; printed in the largest unit")
    func durations() {
        #expect(RetentionDuration.seconds("90") == 90)
        #expect(RetentionDuration.seconds("90s") == 90)
        #expect(RetentionDuration.seconds("30m") == 1_800)
        #expect(RetentionDuration.seconds(" 24H ") == 86_400)
        #expect(RetentionDuration.seconds("7d") == 604_800)
        #expect(RetentionDuration.seconds("off") == 0 && RetentionDuration.seconds("never") == 0 && RetentionDuration.seconds("0") == 0)
        #expect(RetentionDuration.seconds("-5") == nil && RetentionDuration.seconds("h") == nil && RetentionDuration.seconds("5w") == nil)
        #expect(RetentionDuration.seconds("\(Int.max)d") == nil)
        #expect(RetentionDuration.text(0) == "off" && RetentionDuration.text(90) == "90s" && RetentionDuration.text(7_200) == "2h")
    }
}
