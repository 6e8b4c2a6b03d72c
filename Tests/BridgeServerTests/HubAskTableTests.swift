import BridgeACP
import BridgeRPC
import Testing
@testable import BridgeServer

/// The agent's requests to clients as a value (``AskTable``, issue 31 item 2): who is asked, which answer wins, what a
/// client's departure settles, and when a request times out, without a bridge or a clock that moves.
@Suite("Hub ask table", .tags(.unit))
struct HubAskTableTests {
    let start = ContinuousClock.now
    static let deadlines = AskTable.Deadlines(permission: .seconds(1800), other: .seconds(120), orphaned: .seconds(300))

    /// A table with one `session/request_permission` of session "s" asked of `targets` at `start`.
    func makeTable(asking targets: Set<ConnectionID>, method: String = ACPMethod.requestPermission) -> (table: AskTable, id: Int64) {
        var table = AskTable(deadlines: Self.deadlines)
        let id = table.add(
            agentRequestID: .int(77), method: method, sessionID: "s", params: ["sessionId": "s"], targets: targets,
            generation: 1, at: start)
        return (table, id)
    }

    @Test("ids count from 1; a request asked of nobody is orphaned from the moment it came, one asked of someone is not")
    func addOrphans() {
        let madeTable = makeTable(asking: [])
        var table = madeTable.table
        let first = madeTable.id
        let second = table.add(agentRequestID: .string("x"), method: "_x/ext", sessionID: "t", params: nil, targets: [4], generation: 2, at: start + .seconds(9))
        #expect(first == 1)
        #expect(second == 2)
        #expect(table.count == 2)
        #expect(table[first]?.orphanedSince == start)
        #expect(table[second]?.orphanedSince == nil)
        #expect(table[second]?.askedAt == start + .seconds(9))
        #expect(table[second]?.agentRequestID == .string("x"))
    }

    @Test("the first success wins: the other clients asked are told, and a late answer finds nothing")
    func firstSuccessWins() {
        let madeTable = makeTable(asking: [1, 2, 3])
        var table = madeTable.table
        let id = madeTable.id
        guard case .settled(let ask, let others) = table.answer(id, from: 2, outcome: .success(["outcome": "x"])) else {
            Issue.record("a success did not settle the request")
            return
        }
        #expect(ask.agentRequestID == .int(77))
        #expect(others == [1, 3])
        #expect(table.count == 0)
        guard case .unknown = table.answer(id, from: 1, outcome: .success([:])) else {
            Issue.record("a late answer was taken")
            return
        }
    }

    @Test("an error waits while another client asked may still answer; the last error settles it for the agent")
    func errorsWaitForOthers() {
        let madeTable = makeTable(asking: [1, 2])
        var table = madeTable.table
        let id = madeTable.id
        let first = JSONRPCError.internalError("one")
        let second = JSONRPCError.internalError("two")
        guard case .waiting(let waiting) = table.answer(id, from: 1, outcome: .failure(first)) else {
            Issue.record("one client's error settled the request")
            return
        }
        #expect(waiting.targets == [2])
        #expect(waiting.failed == [1])
        #expect(table.asked(id, of: 1) == nil)
        // The client that failed cannot answer again.
        guard case .unknown = table.answer(id, from: 1, outcome: .success([:])) else {
            Issue.record("a client that failed answered again")
            return
        }
        guard case .settled(let ask, let others) = table.answer(id, from: 2, outcome: .failure(second)) else {
            Issue.record("the last error did not settle the request")
            return
        }
        #expect(ask.lastError == second)
        #expect(others.isEmpty)
        #expect(table.count == 0)
    }

    @Test("a success after another client's error wins, and the client that failed is not told")
    func successAfterError() {
        let madeTable = makeTable(asking: [1, 2])
        var table = madeTable.table
        let id = madeTable.id
        _ = table.answer(id, from: 1, outcome: .failure(.internalError("no")))
        guard case .settled(_, let others) = table.answer(id, from: 2, outcome: .success([:])) else {
            Issue.record("a success did not settle the request")
            return
        }
        #expect(others.isEmpty)
    }

    @Test("a client leaving: others still asked keep the request; the last one orphans it while its session lives")
    func clientLeftKeeps() {
        let madeTable = makeTable(asking: [1, 2])
        var table = madeTable.table
        let id = madeTable.id
        let firstLeft = table.clientLeft(1, at: start + .seconds(5), sessionExists: { _ in true })
        #expect(firstLeft.isEmpty)
        #expect(table[id]?.targets == [2])
        #expect(table[id]?.orphanedSince == nil)
        let secondLeft = table.clientLeft(2, at: start + .seconds(7), sessionExists: { _ in true })
        #expect(secondLeft.isEmpty)
        #expect(table[id]?.targets == [])
        #expect(table[id]?.orphanedSince == start + .seconds(7))
        // A client that was not asked changes nothing.
        let strangerLeft = table.clientLeft(9, at: start + .seconds(8), sessionExists: { _ in false })
        #expect(strangerLeft.isEmpty)
        #expect(table.count == 1)
    }

    @Test("the last client asked leaving settles the request: with the error of those who failed, or as unaskable when the session is gone")
    func clientLeftSettles() {
        let madeFailedtable = makeTable(asking: [1, 2])
        var failedTable = madeFailedtable.table
        let failedID = madeFailedtable.id
        _ = failedTable.answer(failedID, from: 1, outcome: .failure(.internalError("refused")))
        let departures = failedTable.clientLeft(2, at: start, sessionExists: { _ in true })
        guard departures.count == 1, case .failed(let entry, let error) = departures[0] else {
            Issue.record("expected the request failed with the kept error, got \(departures)")
            return
        }
        #expect(entry.id == failedID)
        #expect(error == .internalError("refused"))
        #expect(failedTable.count == 0)

        let madeGonetable = makeTable(asking: [3])
        var goneTable = madeGonetable.table
        let goneID = madeGonetable.id
        let gone = goneTable.clientLeft(3, at: start, sessionExists: { $0 != "s" })
        guard gone.count == 1, case .unaskable(let unaskable) = gone[0] else {
            Issue.record("expected the request unaskable, got \(gone)")
            return
        }
        #expect(unaskable.id == goneID)
        #expect(goneTable.count == 0)
    }

    @Test("a client attaching is asked what it was not asked, did not fail and can answer, oldest first; the request is no longer orphaned")
    func askAgain() {
        var table = AskTable(deadlines: Self.deadlines)
        let permission = table.add(agentRequestID: .int(1), method: ACPMethod.requestPermission, sessionID: "s", params: nil, targets: [], generation: 1, at: start)
        let elicitation = table.add(agentRequestID: .int(2), method: ACPMethod.elicitationCreate, sessionID: "s", params: nil, targets: [], generation: 1, at: start)
        let other = table.add(agentRequestID: .int(3), method: ACPMethod.requestPermission, sessionID: "t", params: nil, targets: [], generation: 1, at: start)
        let failedBy5 = table.add(agentRequestID: .int(4), method: ACPMethod.requestPermission, sessionID: "s", params: nil, targets: [5, 6], generation: 1, at: start)
        let later = table.add(agentRequestID: .int(5), method: "_x/ask", sessionID: "s", params: nil, targets: [], generation: 1, at: start)
        _ = table.answer(failedBy5, from: 5, outcome: .failure(.internalError("no")))

        let asked = table.askAgain(session: "s", client: 5, canAnswer: { $0 != ACPMethod.elicitationCreate })
        #expect(asked.map(\.id) == [permission, later])
        #expect(table[permission]?.targets == [5])
        #expect(table[permission]?.orphanedSince == nil)
        #expect(table[elicitation]?.targets == [])
        #expect(table[elicitation]?.orphanedSince == start)
        #expect(table[other]?.targets == [])
        #expect(table[failedBy5]?.targets == [6])
        // Asked already: not again.
        let again = table.askAgain(session: "s", client: 5, canAnswer: { _ in true })
        #expect(again.map(\.id) == [elicitation])
    }

    @Test("the next deadline is the earliest answer timeout by method, or orphaned time for a request with nobody to ask")
    func nextDeadline() {
        var table = AskTable(deadlines: Self.deadlines)
        #expect(table.nextDeadline == nil)
        _ = table.add(agentRequestID: .int(1), method: ACPMethod.requestPermission, sessionID: "s", params: nil, targets: [1], generation: 1, at: start)
        #expect(table.nextDeadline == start + .seconds(1800))
        _ = table.add(agentRequestID: .int(2), method: ACPMethod.requestPermission, sessionID: "s", params: nil, targets: [], generation: 1, at: start + .seconds(10))
        #expect(table.nextDeadline == start + .seconds(310))
        _ = table.add(agentRequestID: .int(3), method: ACPMethod.elicitationCreate, sessionID: "s", params: nil, targets: [2], generation: 1, at: start + .seconds(20))
        #expect(table.nextDeadline == start + .seconds(140))
    }

    @Test("expiry: nothing before its time; then the unanswered past their timeout and the orphaned past theirs, oldest first")
    func expire() {
        var table = AskTable(deadlines: Self.deadlines)
        let elicitation = table.add(agentRequestID: .int(1), method: ACPMethod.elicitationCreate, sessionID: "s", params: nil, targets: [1], generation: 1, at: start)
        let orphan = table.add(agentRequestID: .int(2), method: ACPMethod.requestPermission, sessionID: "s", params: nil, targets: [], generation: 1, at: start)
        let permission = table.add(agentRequestID: .int(3), method: ACPMethod.requestPermission, sessionID: "s", params: nil, targets: [1], generation: 1, at: start)

        #expect(table.expire(at: start + .seconds(119)).isEmpty)
        let atTimeout = table.expire(at: start + .seconds(120))
        guard atTimeout.count == 1, case .unanswered(let unanswered, let after) = atTimeout[0] else {
            Issue.record("expected the elicitation unanswered, got \(atTimeout)")
            return
        }
        #expect(unanswered.id == elicitation)
        #expect(after == .seconds(120))

        #expect(table.expire(at: start + .seconds(299)).isEmpty)
        let atOrphaned = table.expire(at: start + .seconds(300))
        guard atOrphaned.count == 1, case .orphaned(let orphaned, let waited) = atOrphaned[0] else {
            Issue.record("expected the orphaned permission, got \(atOrphaned)")
            return
        }
        #expect(orphaned.id == orphan)
        #expect(waited == .seconds(300))
        // A permission someone can still answer waits its whole half hour.
        #expect(table.expire(at: start + .seconds(1799)).isEmpty)
        #expect(table.expire(at: start + .seconds(1800)).count == 1)
        #expect(table[permission] == nil)
        #expect(table.count == 0)
    }

    @Test("removing by a rule returns the requests removed, oldest first, and keeps the rest")
    func removeAll() {
        var table = AskTable(deadlines: Self.deadlines)
        var ids: [Int64] = []
        for index in 0..<20 {
            ids.append(table.add(agentRequestID: .int(Int64(index)), method: "m", sessionID: index % 2 == 0 ? "even" : "odd", params: nil,
                                 targets: [], generation: index < 10 ? 1 : 2, at: start))
        }
        let even = table.removeAll { $0.sessionID == "even" }
        let evenIDs = ids.enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
        #expect(even.map(\.id) == evenIDs)
        #expect(table.count == 10)
        table.removeAll { $0.generation == 1 }
        #expect(table.count == 5)
        let rest = table.removeAll { _ in true }.map(\.ask.agentRequestID)
        let odd: [JSONRPCID] = [.int(11), .int(13), .int(15), .int(17), .int(19)]
        #expect(rest == odd)
    }
}
