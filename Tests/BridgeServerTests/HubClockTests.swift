import BridgeRPC
import BridgeSessionStore
import BridgeTestKit
import Foundation
import Testing
@testable import BridgeServer

/// The hub reads the time from the configuration's clock (issue 31 item 2), not from `Date()`: the times it stores with
/// a session, and the age of a stored session it starts with, follow a clock a test sets.
@Suite("Hub clock", .timeLimit(.minutes(1)), .tags(.loopback))
struct HubClockTests {
    /// A wall time far from the machine's.
    static let longAgo = Date(timeIntervalSince1970: 1_000_000_000)

    @Test("a new session is stored with its creation time on the bridge's clock")
    func storedTimes() async throws {
        let state = try TestBridge.makeDirectory()
        let store = try SessionStore(directory: URL(fileURLWithPath: state))
        let clock = ManualClock(wallStart: HubClockTests.longAgo)
        let session = try await TestBridge.with(configure: {
            $0.sessionStore = store
            $0.clock = clock
        }, { port, _ in
            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: false)
                return try await phone.newSession(seed: false)
            }
        })
        _ = try await store.flush()
        let stored = try store.load().first { kept in kept.row.id == session }
        let row = try #require(stored?.row)
        // (`updatedAt` is the store's to set, when it writes.)
        #expect(row.createdAt == HubClockTests.longAgo.timeIntervalSince1970)
    }

    @Test("a stored session's idle age is measured on the bridge's clock: stored now, it is two days idle on a clock two days ahead")
    func storedAge() async throws {
        let state = try TestBridge.makeDirectory()
        let work = try TestBridge.makeDirectory()
        let store = try SessionStore(directory: URL(fileURLWithPath: state))
        // The store stamps the row with the machine's time now.
        store.enqueue(.upsertSession(StoredSessionRow(id: "old", agentSessionId: "old", cwd: work, createdAt: 1, updatedAt: 1)))
        _ = try await store.flush()
        // On the machine's clock the session was used just now and is kept; on the bridge's it is two days idle, past the
        // 1 h limit, and dropped when the bridge starts.
        let clock = ManualClock(wallStart: Date().addingTimeInterval(2 * 86_400))
        let logs = TestLog()
        try await TestBridge.with(logs: logs, configure: {
            $0.sessionStore = store
            $0.workingDirectory = work
            $0.clock = clock
            $0.retention.idleTimeout = .seconds(3600)
        }, { port, _ in
            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: false)
                // The bridge drops it as it starts (its retention runs beside the first connections): waited for (at most
                // 10 s), then looked for.
                #expect(await logs.waitFor("dropped an idle session"), "the session two days idle on the bridge's clock was not dropped")
                phone.send(["jsonrpc": "2.0", "id": "list", "method": "session/list", "params": [:]])
                let (answer, _) = try await phone.collect(until: "list")
                let listed = answer["result"]?["sessions"]?.arrayValue?.contains { $0["sessionId"] == "old" } ?? true
                #expect(!listed, "the session two days idle on the bridge's clock is still listed")
                phone.send(["jsonrpc": "2.0", "id": "r", "method": "_oa/session/resume", "params": ["sessionId": "old", "lastSeq": 0]])
                let (resumed, _) = try await phone.collect(until: "r")
                #expect(resumed["error"]?["code"] == .int(Int64(BridgeMethod.sessionDroppedErrorCode)), "\(resumed)")
            }
        })
    }
}
