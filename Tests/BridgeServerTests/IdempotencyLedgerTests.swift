import BridgeRPC
import Testing
@testable import BridgeServer

@Suite("Idempotency keys of a session's prompts", .tags(.unit))
struct IdempotencyLedgerTests {
    private func waiter(_ connection: ConnectionID, _ id: Int64) -> IdempotencyLedger.Waiter {
        .init(connection: connection, requestID: .int(id), batch: nil)
    }

    @Test("a new key is sent; a retry while it runs waits and gets the outcome; a later retry gets it at once")
    func lifecycle() {
        var ledger = IdempotencyLedger()
        #expect(ledger.begin("k", waiter: waiter(1, 1)) == .send(position: 1))
        #expect(ledger.begin("k", waiter: waiter(2, 7)) == .wait)
        let settled = ledger.finish("k", outcome: .success(["stopReason": "end_turn"]))
        #expect(settled?.position == 1)
        #expect(settled?.waiters == [waiter(2, 7)])
        #expect(ledger.begin("k", waiter: waiter(3, 9)) == .answer(.success(["stopReason": "end_turn"])))
        #expect(ledger.begin("other", waiter: waiter(1, 2)) == .send(position: 2))
    }

    @Test("at most 256 keys: the oldest finished go first, a running one stays")
    func capacity() {
        var ledger = IdempotencyLedger()
        _ = ledger.begin("running", waiter: waiter(1, 0))
        for n in 1...300 {
            _ = ledger.begin("k\(n)", waiter: waiter(1, Int64(n)))
            ledger.finish("k\(n)", outcome: .success([:]))
        }
        #expect(ledger.count == IdempotencyLedger.capacity)
        #expect(ledger.begin("running", waiter: waiter(2, 1)) == .wait)
        #expect(ledger.begin("k300", waiter: waiter(2, 2)) == .answer(.success([:])))
        if case .send = ledger.begin("k1", waiter: waiter(2, 3)) {} else { Issue.record("k1 should have been forgotten") }
    }

    @Test("the key is taken out of _meta.oa (which the agent never sees), other _meta kept; a bad key is an error")
    func takeKey() throws {
        let params: JSONValue = ["sessionId": "s", "prompt": [], "_meta": ["oa": ["idempotencyKey": "abc"], "trace": "t"]]
        let (key, stripped) = try IdempotencyLedger.takeKey(from: params)
        #expect(key == "abc")
        #expect(stripped == ["sessionId": "s", "prompt": [], "_meta": ["trace": "t"]])
        let (none, bare) = try IdempotencyLedger.takeKey(from: ["sessionId": "s", "_meta": ["oa": ["origin": "x"]]])
        #expect(none == nil)
        #expect(bare == ["sessionId": "s"])
        for bad: JSONValue in ["", .string(String(repeating: "x", count: 129)), 5] {
            #expect(throws: JSONRPCError.self) { try IdempotencyLedger.takeKey(from: ["_meta": ["oa": ["idempotencyKey": bad]]]) }
        }
        #expect(try IdempotencyLedger.takeKey(from: ["_meta": ["oa": ["idempotencyKey": .string(String(repeating: "é", count: 128))]]]).key?.count == 128)
    }

    @Test("restored keys answer at once and later keys continue their positions")
    func restored() {
        var ledger = IdempotencyLedger()
        ledger.restore("old", position: 41, outcome: .failure(JSONRPCError.internalError("x")))
        #expect(ledger.begin("old", waiter: waiter(1, 1)) == .answer(.failure(JSONRPCError.internalError("x"))))
        #expect(ledger.begin("new", waiter: waiter(1, 2)) == .send(position: 42))
    }
}
