import BridgeRPC
import BridgeWorkspace
import Foundation
import Testing
@testable import BridgeServer
@testable import BridgeSessionStore

/// Stored sessions read back by the session table (``SessionTable/dormantRecord(_:files:additional:bounds:idleSince:)``,
/// issue 31 item 2): dormant, their replay and keys rebuilt, and numbering that never reuses a `seq` a crashed
/// bridge may have sent.
@Suite("Hub session table, stored sessions", .tags(.unit))
struct HubSessionTableStoredTests {
    let start = ContinuousClock.now
    static let bounds = SessionTable.Bounds(replayCount: 2, replayBytes: 1 << 20, reservesSeqs: true)

    static func stored(nextSeq: Int64, seqReserved: Int64 = 0, updates: [Int64] = [], keys: [StoredPromptKeyRow] = []) -> StoredSession {
        StoredSession(
            row: StoredSessionRow(
                id: "s", agentSessionId: "s", cwd: "/", additionalDirectories: "[]", title: "kept", deviceId: "d1",
                modes: #"{"currentModeId":"ask"}"#, nextSeq: nextSeq, seqReserved: seqReserved, createdAt: 5, updatedAt: 6),
            updates: updates.map { StoredUpdateRow(sessionId: "s", seq: $0, payload: #"{"sessionId":"s","update":{"n":\#($0)}}"#) },
            keys: keys)
    }

    func record(_ stored: StoredSession) throws -> SessionRecord {
        SessionTable.dormantRecord(
            stored, files: try WorkspaceFiles(root: NSTemporaryDirectory()), additional: [], bounds: Self.bounds, idleSince: start)
    }

    @Test("a stored session comes back dormant with its state, its newest updates within the bounds, numbering after them")
    func dormant() throws {
        let record = try record(Self.stored(nextSeq: 1, updates: [1, 2, 3]))
        #expect(record.state == .dormant)
        #expect(record.title == "kept")
        #expect(record.device == "d1")
        #expect(record.createdAt == 5)
        #expect(record.modes == ["currentModeId": "ask"])
        #expect(record.replay.map(\.seq) == [2, 3])
        #expect(record.replay.first?.params["update"]?["n"] == 2)
        #expect(record.nextSeq == 4)
        #expect(record.unstored == nil)
        #expect(record.idleSince == start)
    }

    @Test("after a bridge that did not stop cleanly, numbering goes on past its reservation and the gap is said")
    func crashed() throws {
        let record = try record(Self.stored(nextSeq: 4, seqReserved: 1027, updates: [2, 3]))
        #expect(record.unstored == 4...1027)
        #expect(record.nextSeq == 1028)
        var table = SessionTable(bounds: Self.bounds)
        table.load(["s": record])
        #expect(table.append(to: "s") { BufferedUpdate(seq: $0, params: [:]) }?.update.seq == 1028)
        // A clean stop released the reservation: nothing lost, numbering after the last stored update.
        let clean = try self.record(Self.stored(nextSeq: 4, seqReserved: 0, updates: [2, 3]))
        #expect(clean.unstored == nil)
        #expect(clean.nextSeq == 4)
    }

    @Test("a stored prompt's outcome comes back as its answer; one that ran when the bridge stopped as interrupted")
    func keys() throws {
        let done = SessionTable.outcomeText(.success(["stopReason": "end_turn"]))
        let failed = SessionTable.outcomeText(.failure(JSONRPCError(code: -32000, message: "no", data: ["x": 1])))
        let record = try record(Self.stored(nextSeq: 1, keys: [
            StoredPromptKeyRow(sessionId: "s", key: "a", position: 1, outcome: done),
            StoredPromptKeyRow(sessionId: "s", key: "b", position: 2, outcome: failed),
            StoredPromptKeyRow(sessionId: "s", key: "c", position: 3, outcome: nil),
        ]))
        var prompts = record.prompts
        let waiter = IdempotencyLedger.Waiter(connection: 1, requestID: .int(1), batch: nil)
        #expect(prompts.begin("a", waiter: waiter) == .answer(.success(["stopReason": "end_turn"])))
        #expect(prompts.begin("b", waiter: waiter) == .answer(.failure(JSONRPCError(code: -32000, message: "no", data: ["x": 1]))))
        #expect(prompts.begin("c", waiter: waiter) == .answer(.failure(BridgeErrors.interrupted("s"))))
        #expect(SessionTable.outcome(fromText: "not json") == nil)
    }
}
