import BridgePairing
import BridgeServer
import BridgeTestKit
import Foundation
import Logging
import Testing

/// Token rows do not pile up in `pairing.sqlite` while the bridge runs (issue 15 item 2): those expired more than a
/// week ago are deleted every hour of the hub's clock.
@Suite("Token retention", .timeLimit(.minutes(1)), .tags(.loopback))
struct TokenRetentionTests {
    @Test("the hourly sweep deletes token rows that expired more than a week ago")
    func purge() async throws {
        // The store and the bridge read one clock moved by hand.
        let clock = ManualClock()
        var logger = Logger(label: "test.tokens")
        logger.logLevel = .critical
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("oa-bridge-purge-\(UUID().uuidString)")
        let store = try TokenStore(directory: directory, clock: TokenClock(clock), logger: logger)
        defer { try? FileManager.default.removeItem(at: directory) }
        let pairing = try await store.issuePairingToken()
        // The pairing code expired an hour after it was issued, and that was more than a week ago.
        clock.advance(by: .seconds(Int64(pairing.expiresAt.timeIntervalSince(clock.wallTime)) + 7 * 24 * 3600 + 60))

        let logs = TestLog()
        try await TestBridge.with(logs: logs, configure: {
            $0.authenticator = Authenticator(store: store)
            $0.clock = clock
        }, { _, _ in
            // The sweeps have started (their first hour counts from here).
            try #require(await clock.waitForSleepers(2))
            var purged = false
            for _ in 0..<3 where !purged {
                clock.advance(by: .seconds(3600))
                purged = await logs.waitFor("purged expired tokens", timeout: .seconds(3))
            }
            #expect(purged)
        })
        #expect(try await store.purgeExpiredTokens() == 0, "nothing left to purge")
    }
}
