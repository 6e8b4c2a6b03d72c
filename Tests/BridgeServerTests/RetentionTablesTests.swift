import Testing
@testable import BridgeServer

/// The bounded tables behind retention (issue 15 item 2): the memory of dropped sessions, and the per-address table
/// of connection admission.
@Suite("Retention tables", .tags(.unit))
struct RetentionTablesTests {
    @Test("the dropped sessions remembered stay within their capacity, the oldest forgotten first")
    func tombstonesBounded() {
        var tombstones = RetentionTombstones()
        let total = RetentionTombstones.capacity * 10
        for index in 0..<total { tombstones.insert("s\(index)", reason: .maxIdleSessions) }
        #expect(tombstones.count == RetentionTombstones.capacity)
        #expect(tombstones.reason(for: "s0") == nil)
        #expect(tombstones.reason(for: "s\(total - 1)") == .maxIdleSessions)
        #expect(tombstones.reason(for: "s\(total - RetentionTombstones.capacity)") == .maxIdleSessions)
        #expect(tombstones.reason(for: "s\(total - RetentionTombstones.capacity - 1)") == nil)
    }

    @Test("a session used again is forgotten; inserting and removing forever keeps the memory bounded")
    func tombstoneRemoved() {
        var tombstones = RetentionTombstones()
        tombstones.insert("a", reason: .idleTimeout)
        tombstones.remove("a")
        #expect(tombstones.reason(for: "a") == nil)
        for index in 0..<10_000 {
            tombstones.insert("x\(index % 7)", reason: .idleTimeout)
            tombstones.remove("x\(index % 7)")
        }
        tombstones.insert("b", reason: .maxIdleReplayBytes)
        #expect(tombstones.count == 1)
        #expect(tombstones.reason(for: "b") == .maxIdleReplayBytes)
    }

    @Test("10,000 addresses that connected and got their answer leave nothing in the admission table")
    func admissionTableEmptiesOnAnswer() {
        let admission = ConnectionAdmission(maxAccepted: 20_000, maxPendingPerAddress: 4)
        for index in 0..<10_000 {
            let address = "10.\(index / 65_536).\(index / 256 % 256).\(index % 256)"
            #expect(admission.admit(address).refusal == nil)
            if index % 2 == 0 { admission.answered(address) } else { admission.abandoned(address) }
            admission.closed()
        }
        #expect(admission.trackedAddresses == 0)
        #expect(admission.counts(for: "10.0.0.1").pending == 0)
    }
}
