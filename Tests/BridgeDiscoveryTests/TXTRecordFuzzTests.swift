import Testing
@testable import BridgeDiscovery

/// Hostile TXT records from the network (issue 6): random and mutated bytes never crash the
/// parser, and whatever it accepts encodes back to a record it reads the same way.
@Suite("TXT records under random and mutated input", .tags(.unit))
struct TXTRecordFuzzTests {
    /// A small deterministic generator, so a failure can be replayed.
    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    @Test("20,000 random and mutated records: no crash; accepted ones round-trip")
    func randomRecords() async throws {
        var random = SplitMix(state: 42)
        let valid = try TXTRecord(["txtvers": "1", "proto": "0.2,1", "id": "6f1c2b3a", "auth": "token", "path": "/"]).wireFormat
        var accepted = 0
        // Gives the cooperative pool back now and then: this loop takes a second of CPU, and the bridges other tests run
        // at the same time need the pool's two threads (docs/testing.md, "CPU-heavy tests").
        for round in 0..<20_000 {
            if round % 1_000 == 0 { await Task.yield() }
            var bytes: [UInt8]
            if round % 2 == 0 {
                bytes = (0..<Int.random(in: 0...300, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            } else {
                bytes = valid
                for _ in 0..<Int.random(in: 1...6, using: &random) {
                    bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
                }
            }
            guard let record = try? TXTRecord(wireFormat: bytes) else { continue }
            accepted += 1
            let again = try TXTRecord(wireFormat: record.wireFormat)
            #expect(again.dictionary == record.dictionary, "round \(round): \(bytes)")
        }
        #expect(accepted > 1_000, "the generator should also produce acceptable records")
    }
}
