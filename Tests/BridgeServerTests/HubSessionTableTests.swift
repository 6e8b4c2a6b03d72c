import BridgeACP
import BridgeRPC
import BridgeWorkspace
import Foundation
import Testing
@testable import BridgeServer

/// The sessions the hub keeps as a value (``SessionTable``, issue 31 item 2): creation, loading dormant, restoring
/// live or read-only, numbering and keeping updates, early notifications, the agent's departure and retention,
/// without a bridge or a clock that moves.
@Suite("Hub session table", .tags(.unit))
struct HubSessionTableTests {
    let start = ContinuousClock.now
    static let bounds = SessionTable.Bounds(replayCount: 100, replayBytes: 1 << 20, reservesSeqs: false)

    static func record(members: Set<ConnectionID> = []) throws -> SessionRecord {
        SessionRecord(files: try WorkspaceFiles(root: NSTemporaryDirectory()), members: members)
    }

    static func update(_ seq: Int64, text: String = "hi") -> BufferedUpdate {
        BufferedUpdate(seq: seq, params: ["sessionId": "s", "update": ["sessionUpdate": "agent_message_chunk", "content": .string(text)]])
    }

    static func note(_ session: String, _ n: Int = 0) -> JSONRPCNotification {
        JSONRPCNotification(method: ACPMethod.sessionUpdate, params: ["sessionId": .string(session), "n": .int(Int64(n))])
    }

    /// Appends one update to `session` and returns its seq.
    static func append(_ table: inout SessionTable, _ session: String, text: String = "hi") -> Int64? {
        table.append(to: session) { update($0, text: text) }?.update.seq
    }

    @Test("a registered session is live and replaces a kept one of the same id; a retention drop of that id is forgotten")
    func register() throws {
        var table = SessionTable(bounds: Self.bounds)
        var dormant = try Self.record()
        dormant.title = "from before"
        table.load(["s": dormant])
        #expect(table.state(of: "s") == .dormant)
        let first = table.register("s", try Self.record())
        #expect(first.replacedKept)
        #expect(table.state(of: "s") == .live)
        #expect(table["s"]?.title == nil)
        let again = table.register("s", try Self.record())
        #expect(!again.replacedKept)

        var retention = SessionTable(bounds: Self.bounds)
        _ = retention.register("old", try Self.record())
        let pruned = retention.prune(at: start, retention: SessionRetention(maxIdleSessions: 0), busy: [])
        #expect(pruned.retired.map(\.session) == ["old"])
        #expect(retention.droppedReason("old") == .maxIdleSessions)
        _ = retention.register("old", try Self.record())
        #expect(retention.droppedReason("old") == nil)
    }

    @Test("stored sessions load dormant with nobody attached, and never replace a session kept already")
    func load() throws {
        var table = SessionTable(bounds: Self.bounds)
        _ = table.register("live", try Self.record())
        var stored = try Self.record(members: [7])
        stored.state = .live
        stored.nextSeq = 40
        table.load(["live": stored, "kept": stored])
        #expect(table.state(of: "live") == .live)
        #expect(table.lastSeq(of: "live") == 0)
        #expect(table.state(of: "kept") == .dormant)
        #expect(table.members(of: "kept").isEmpty)
        #expect(table.lastSeq(of: "kept") == 39)
        #expect(Self.append(&table, "kept") == 40)
    }

    @Test("a restore the agent answers makes a dormant session live, one it refuses read-only; during shutdown it stays dormant")
    func restore() throws {
        var table = SessionTable(bounds: Self.bounds)
        let dormant = try Self.record()
        table.load(["a": dormant, "b": dormant, "c": dormant, "d": dormant])
        #expect(table.restoreAnswered("a", succeeded: true, shuttingDown: false) == .live)
        #expect(table.state(of: "a") == .live)
        #expect(table.restoreAnswered("b", succeeded: false, shuttingDown: false) == .readOnly)
        #expect(table.state(of: "b") == .readOnly)
        #expect(table.restoreAnswered("c", succeeded: false, shuttingDown: true) == .stillDormant)
        #expect(table.restoreAnswered("c", succeeded: true, shuttingDown: true) == .stillDormant)
        #expect(table.state(of: "c") == .dormant)
        // Restored already by another path, or dropped meanwhile: nothing changes.
        #expect(table.restoreAnswered("a", succeeded: false, shuttingDown: false) == .unchanged)
        #expect(table.state(of: "a") == .live)
        #expect(table.restoreAnswered("gone", succeeded: true, shuttingDown: false) == .gone)
        #expect(table.state(of: "gone") == nil)
        // An agent that can neither load nor resume: read-only, only from dormant.
        let dChanged = table.markReadOnly("d")
        #expect(dChanged)
        #expect(table.state(of: "d") == .readOnly)
        let aChanged = table.markReadOnly("a")
        #expect(!aChanged)
        #expect(table.state(of: "a") == .live)
    }

    @Test("a second restore of the same session finds the first one under way until it ends")
    func restoreUnderWay() async {
        var table = SessionTable(bounds: Self.bounds)
        #expect(table.restoreUnderWay("s") == nil)
        let task = Task<JSONRPCError?, Never> { nil }
        table.setRestore("s", task)
        #expect(table.restoreUnderWay("s") != nil)
        #expect(table.restoreUnderWay("t") == nil)
        #expect(await table.restoreUnderWay("s")?.value == nil)
        table.setRestore("s", nil)
        #expect(table.restoreUnderWay("s") == nil)
    }

    @Test("when the agent goes, nobody stays attached, live sessions turn dormant, read-only ones stay, early notifications go")
    func agentGone() throws {
        var table = SessionTable(bounds: Self.bounds)
        _ = table.register("live", try Self.record())
        table.attach(1, to: "live")
        table.attach(2, to: "live")
        table.load(["ro": try Self.record()])
        table.markReadOnly("ro")
        table.attach(1, to: "ro")
        #expect(table.keepEarly(Self.note("new"), session: "new", creating: true).taken)
        table.agentGone()
        #expect(table.state(of: "live") == .dormant)
        #expect(table.state(of: "ro") == .readOnly)
        #expect(table.members(of: "live").isEmpty)
        #expect(table.members(of: "ro").isEmpty)
        #expect(table.earlyCount("new") == 0)
        #expect(table.count == 2)
    }

    @Test("updates are numbered from 1 per session without a gap, kept for replay, and go to the attached connections")
    func numbering() throws {
        var table = SessionTable(bounds: Self.bounds)
        _ = table.register("a", try Self.record())
        _ = table.register("b", try Self.record())
        table.attach(3, to: "a")
        #expect(table.lastSeq(of: "a") == 0)
        #expect(Self.append(&table, "a") == 1)
        #expect(Self.append(&table, "a") == 2)
        #expect(Self.append(&table, "b") == 1)
        let third = table.append(to: "a") { Self.update($0) }
        #expect(third?.update.seq == 3)
        #expect(third?.members == [3])
        #expect(third?.reserveThrough == nil)
        #expect(table.lastSeq(of: "a") == 3)
        #expect(table["a"]?.replay.map(\.seq) == [1, 2, 3])
        #expect(table.append(to: "unknown") { Self.update($0) } == nil)
        #expect(table.lastSeq(of: "unknown") == nil)
    }

    @Test("with a store, seq numbers are reserved in blocks, the next asked for when half of the present one is used")
    func reservations() throws {
        var table = SessionTable(bounds: SessionTable.Bounds(replayCount: 10, replayBytes: 1 << 20, reservesSeqs: true, reservationBlock: 8))
        _ = table.register("s", try Self.record())
        var reserved: [Int64: Int64] = [:]
        for _ in 1...12 {
            guard let appended = table.append(to: "s", { Self.update($0) }) else { break }
            if let through = appended.reserveThrough { reserved[appended.update.seq] = through }
        }
        // Seq 1 reserves 1...9; seq 5 (5 + 4 >= 9) reserves through 13; seq 9 through 17.
        #expect(reserved == [1: 9, 5: 13, 9: 17])
        #expect(table["s"]?.seqReserved == 17)
    }

    @Test("the store is told to trim whenever the replay buffer's oldest update changes; one too large empties it")
    func trims() throws {
        // Each update's params are 81 bytes: two fit in 200.
        var table = SessionTable(bounds: SessionTable.Bounds(replayCount: 2, replayBytes: 200, reservesSeqs: true))
        _ = table.register("s", try Self.record())
        // The first one: nothing older is stored (a trim before 1 drops nothing).
        #expect(table.append(to: "s") { Self.update($0) }?.trimBefore == 1)
        #expect(table.append(to: "s") { Self.update($0) }?.trimBefore == nil)
        #expect(table.append(to: "s") { Self.update($0) }?.trimBefore == 2)
        #expect(table["s"]?.replay.map(\.seq) == [2, 3])
        let large = table.append(to: "s") { Self.update($0, text: String(repeating: "x", count: 500)) }
        #expect(large?.update.seq == 4)
        #expect(large?.trimBefore == 5)
        #expect(table["s"]?.replay.count == 0)
    }

    @Test("a session closed is forgotten (not as dropped); a failed load forgets it only when nobody is attached")
    func close() throws {
        var table = SessionTable(bounds: Self.bounds)
        _ = table.register("s", try Self.record())
        table.open("loading", try Self.record())
        table.attach(1, to: "loading")
        let whileAttached = table.closeIfUnattached("loading")
        #expect(!whileAttached)
        table.detach(1, from: "loading")
        let unattached = table.closeIfUnattached("loading")
        #expect(unattached)
        #expect(!table.contains("loading"))
        #expect(table.close("s") != nil)
        #expect(table.close("s") == nil)
        #expect(table.droppedReason("s") == nil)
        #expect(table.isEmpty)
    }

    @Test("notifications wait only while a session is being created, at most 1000 each, and go when no creation waits")
    func early() throws {
        var table = SessionTable(bounds: Self.bounds)
        #expect(table.keepEarly(Self.note("s"), session: "s", creating: false) == (false, false))
        for n in 0..<SessionTable.maxEarlyUpdates {
            #expect(table.keepEarly(Self.note("s", n), session: "s", creating: true) == (true, false))
        }
        #expect(table.keepEarly(Self.note("s", 1000), session: "s", creating: true) == (true, true))
        #expect(table.earlyCount("s") == SessionTable.maxEarlyUpdates)
        #expect(table.keepEarly(Self.note("t"), session: "t", creating: true) == (true, false))
        let registered = table.register("s", try Self.record())
        #expect(registered.early.count == SessionTable.maxEarlyUpdates)
        #expect(registered.early.first?.params?["n"] == 0)
        #expect(registered.early.last?.params?["n"] == 999)
        // Known now: nothing waits for it.
        #expect(table.keepEarly(Self.note("s"), session: "s", creating: true) == (false, false))
        #expect(table.earlyCount("t") == 1)
        table.creationsSettled()
        #expect(table.earlyCount("t") == 0)
    }

    @Test("idle sessions are dropped past the idle timeout, then the longest idle past the count and byte bounds")
    func prune() throws {
        var table = SessionTable(bounds: Self.bounds)
        let retention = SessionRetention(maxIdleSessions: 2, maxIdleReplayBytes: 1 << 20, idleTimeout: .seconds(100))
        for session in ["a", "b", "c", "d"] { _ = table.register(session, try Self.record()) }
        table.attach(1, to: "d")
        // "a" and "b" idle since start, "c" busy (a prompt runs), "d" attached.
        var pruned = table.prune(at: start, retention: retention, busy: ["c"])
        #expect(pruned.retired.isEmpty)
        #expect(pruned.nextDue == start + .seconds(100))
        #expect(table["a"]?.idleSince == start)
        #expect(table["c"]?.idleSince == nil)
        // "c" idle from +10 s: three idle, one too many; "a" (tie with "b": by id) goes.
        pruned = table.prune(at: start + .seconds(10), retention: retention, busy: [])
        #expect(pruned.retired.map(\.session) == ["a"])
        #expect(pruned.retired.first?.reason == .maxIdleSessions)
        #expect(pruned.retired.first?.idleFor == .seconds(10))
        #expect(table.droppedReason("a") == .maxIdleSessions)
        #expect(pruned.nextDue == start + .seconds(100))
        // "b" reaches the timeout at +100 s; "c" 10 s later.
        pruned = table.prune(at: start + .seconds(100), retention: retention, busy: [])
        #expect(pruned.retired.map(\.session) == ["b"])
        #expect(pruned.retired.first?.reason == .idleTimeout)
        #expect(pruned.nextDue == start + .seconds(110))
        #expect(table.contains("c"))
        #expect(table.contains("d"))
        // In use again: its idle time starts afresh when it is next idle.
        table.resetIdle("c")
        pruned = table.prune(at: start + .seconds(150), retention: retention, busy: [])
        #expect(pruned.retired.isEmpty)
        #expect(table["c"]?.idleSince == start + .seconds(150))
        #expect(pruned.nextDue == start + .seconds(250))
    }

    @Test("idle sessions are dropped, the longest idle first, until their replay buffers fit the byte bound")
    func pruneBytes() throws {
        var table = SessionTable(bounds: Self.bounds)
        // Each session's one update is 179 bytes: three are 537, two 358.
        let retention = SessionRetention(maxIdleSessions: 10, maxIdleReplayBytes: 400, idleTimeout: nil)
        let roomy = SessionRetention(maxIdleSessions: 10, maxIdleReplayBytes: 1 << 20)
        for (offset, session) in ["a", "b", "c"].enumerated() {
            _ = table.register(session, try Self.record())
            _ = Self.append(&table, session, text: String(repeating: "x", count: 100))
            _ = table.prune(at: start + .seconds(Int64(offset)), retention: roomy, busy: [])
        }
        let pruned = table.prune(at: start + .seconds(5), retention: retention, busy: [])
        #expect(pruned.retired.map(\.session) == ["a"])
        #expect(pruned.retired.first?.reason == .maxIdleReplayBytes)
        #expect(pruned.nextDue == nil)
        #expect(table.droppedReason("a") == .maxIdleReplayBytes)
        #expect(table.count == 2)
    }

    @Test("an agent's answers and updates keep the modes, models, config options and title clients get when they attach")
    func presentState() throws {
        var table = SessionTable(bounds: Self.bounds)
        _ = table.register("s", try Self.record())
        let kept = table.keepState(of: "s", from: ["modes": ["currentModeId": "ask"], "models": .null, "configOptions": [1]])
        #expect(kept)
        #expect(table["s"]?.modes == ["currentModeId": "ask"])
        #expect(table["s"]?.models == nil)
        let keptUnknown = table.keepState(of: "none", from: ["modes": ["currentModeId": "ask"]])
        #expect(!keptUnknown)
        #expect(table.keepState(of: "s", update: ["sessionUpdate": "current_mode_update", "currentModeId": "code"]) == .mode)
        #expect(table["s"]?.modes == ["currentModeId": "code"])
        #expect(table.keepState(of: "s", update: ["sessionUpdate": "config_option_update", "configOptions": [2]]) == .row)
        #expect(table["s"]?.configOptions == [2])
        let long = String(repeating: "t", count: 2000)
        #expect(table.keepState(of: "s", update: ["sessionUpdate": "session_info_update", "title": .string(long)]) == .title(String(long.prefix(1024))))
        #expect(table.keepState(of: "s", update: ["sessionUpdate": "session_info_update", "title": .string(long)]) == .none)
        #expect(table.keepState(of: "s", update: ["sessionUpdate": "agent_message_chunk"]) == .none)
        table.choose("currentModelId", "fast", in: "s")
        #expect(table["s"]?.models == ["currentModelId": "fast"])
        #expect(table["s"]?.presentState == ["modes": ["currentModeId": "code"], "models": ["currentModelId": "fast"], "configOptions": [2]])
    }
}
