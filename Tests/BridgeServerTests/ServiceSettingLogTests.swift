import BridgeServer
import BridgeTestKit
import Foundation
import Testing

/// Issue 31 item 5 in the service's log: the lines for what the settings turn off or allow (authentication off, clear
/// text allowed, discovery off) say it in words and name the setting by its config key in the `setting` metadata,
/// never a flag of `oa-bridge serve` (an app embedding the library has none).
@Suite("BridgeService's log names settings, not flags", .tags(.loopback))
struct ServiceSettingLogTests {
    @Test("auth none, plaintext allowed, discovery off: words and setting metadata (auth, allow-plaintext, discovery), no flag")
    func settingLines() async throws {
        let log = TestLog()
        var configuration = BridgeServerConfiguration(serverName: "Words Desk", workingDirectory: try TestBridge.makeDirectory())
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.allowPlaintext = true
        var options = BridgeService.Options(configuration: configuration, stateDirectory: URL(fileURLWithPath: try TestBridge.makeDirectory()))
        options.auth = .none
        let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
        let service = try await BridgeService(options: options, logger: log.logger(label: "test.service")) { _ in portSink.yield(0) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await service.run() }
            var iterator = ports.makeAsyncIterator()
            _ = await iterator.next()
            group.cancelAll()
        }
        let expected: [(String, String)] = [
            ("AUTHENTICATION IS OFF in the bridge's settings", "auth"),
            ("PLAINTEXT ALLOWED by the bridge's settings", "allow-plaintext"),
            ("discovery is off in the bridge's settings", "discovery"),
        ]
        for (start, setting) in expected {
            let lines = log.all.filter { $0.message.hasPrefix(start) }
            #expect(lines.count == 1, "\(start): \(log.all.map(\.message))")
            #expect(lines.allSatisfy { $0.metadata["setting"] == setting }, "\(start): \(lines.map(\.metadata))")
        }
        let flags = log.all.filter { $0.message.contains(/--[a-z]/) }.map(\.message)
        #expect(flags.isEmpty, "lines naming a flag: \(flags)")
    }
}
