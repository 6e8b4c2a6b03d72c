import BridgeRPC
import Testing
@testable import BridgeServer

/// A JSON-RPC batch's answers collected as a value (``BatchTable``, issue 31 item 2), without a bridge.
@Suite("Hub batch table", .tags(.unit))
struct HubBatchTableTests {
    static func answer(_ id: Int64) -> JSONRPCMessage {
        .response(JSONRPCResponse(id: .int(id), result: .int(id)))
    }

    @Test("a batch is complete with its last answer, its answers in the order they came, for its connection")
    func completes() {
        var table = BatchTable()
        let batch = table.open(for: 7, expecting: 3)
        guard case .kept = table.add(Self.answer(2), to: batch), case .kept = table.add(Self.answer(1), to: batch) else {
            Issue.record("an answer before the last completed the batch")
            return
        }
        guard case .complete(let record) = table.add(Self.answer(3), to: batch) else {
            Issue.record("the last answer did not complete the batch")
            return
        }
        #expect(record.connection == 7)
        let expected = [Self.answer(2).jsonText, Self.answer(1).jsonText, Self.answer(3).jsonText]
        #expect(record.responses.map(\.jsonText) == expected)
        #expect(table.count == 0)
        // A late answer (the batch is gone) goes on its own.
        guard case .notInBatch = table.add(Self.answer(4), to: batch) else {
            Issue.record("an answer to a completed batch was kept")
            return
        }
    }

    @Test("batches are apart: ids count from 1, and a connection's batches go with it, not another's")
    func apart() {
        var table = BatchTable()
        let first = table.open(for: 1, expecting: 1)
        let second = table.open(for: 2, expecting: 2)
        let third = table.open(for: 1, expecting: 2)
        #expect([first, second, third] == [1, 2, 3])
        table.drop(connection: 1)
        #expect(table.count == 1)
        guard case .notInBatch = table.add(Self.answer(1), to: third), case .kept = table.add(Self.answer(1), to: second) else {
            Issue.record("dropping connection 1 dropped the wrong batches")
            return
        }
        #expect(table.open(for: 1, expecting: 1) == 4)
    }

    @Test("a batch of 10,000 requests completes with all 10,000 answers")
    func large() {
        var table = BatchTable()
        let count = 10_000
        let batch = table.open(for: 1, expecting: count)
        var completed: BatchRecord?
        for index in 0..<count {
            if case .complete(let record) = table.add(Self.answer(Int64(index)), to: batch) { completed = record }
        }
        #expect(completed?.responses.count == count)
        #expect(completed?.remaining == 0)
    }
}
