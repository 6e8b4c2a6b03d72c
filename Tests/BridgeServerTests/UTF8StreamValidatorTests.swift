import BridgeTestKit
import NIOCore
import Testing
@testable import BridgeServer

/// The fragment-by-fragment UTF-8 check (issue 26.4) agrees with the standard library's validation, wherever the
/// bytes are split.
@Suite("UTF-8 checked a fragment at a time", .tags(.unit))
struct UTF8StreamValidatorTests {
    /// Whether `bytes`, split at `cut`, pass the validator and end between characters.
    static func streamed(_ bytes: [UInt8], cut: Int) -> Bool {
        var validator = UTF8StreamValidator()
        guard validator.validate(ByteBuffer(bytes: bytes[..<cut])) else { return false }
        guard validator.validate(ByteBuffer(bytes: bytes[cut...])) else { return false }
        return validator.isComplete
    }

    @Test("every one- and two-byte sequence, and seeded random ones up to 12 bytes, split anywhere")
    func agreesWithTheStandardLibrary() async throws {
        var cases: [[UInt8]] = []
        for a in 0...255 {
            cases.append([UInt8(a)])
            for b in stride(from: 0, through: 255, by: 3) { cases.append([UInt8(a), UInt8(b)]) }
        }
        // Bytes drawn mostly from the interesting ranges (ASCII, continuation, lead bytes).
        var generator = SplitMix64(seed: 26_4)
        let pool: [UInt8] = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1,
                             0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF]
        for _ in 0..<20_000 {
            let length = Int(generator.next() % 13)
            cases.append((0..<length).map { _ in pool[Int(generator.next() % UInt64(pool.count))] })
        }
        // This loop takes a second of CPU, so it runs on a thread of its own: the bridges other tests run at the same
        // time need the cooperative pool's two threads (docs/testing.md, "CPU-heavy tests").
        let disagreements = try await onOwnThread { [cases] in
            var disagreements = 0
            for bytes in cases {
                let expected = String(validating: bytes, as: UTF8.self) != nil
                for cut in 0...bytes.count where Self.streamed(bytes, cut: cut) != expected {
                    disagreements += 1
                }
            }
            return disagreements
        }
        #expect(disagreements == 0)
    }

    @Test("long ASCII runs (the eight-byte path) with a bad byte anywhere are refused")
    func asciiRuns() {
        for position in 0..<40 {
            var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: 40)
            bytes[position] = 0xFF
            var validator = UTF8StreamValidator()
            let valid = validator.validate(ByteBuffer(bytes: bytes))
            #expect(!valid)
        }
        var validator = UTF8StreamValidator()
        let valid = validator.validate(ByteBuffer(bytes: [UInt8](repeating: UInt8(ascii: "a"), count: 40)))
        #expect(valid && validator.isComplete)
    }

    @Test("a request line's HTTP/1.2 is served as 1.1; other versions and other lines are left alone")
    func minorVersions() {
        func rewritten(_ text: String) -> String {
            var bytes = ByteBuffer(string: text)
            ConnectionGuard.servingMinorVersionsAsHTTP11(&bytes)
            return String(buffer: bytes)
        }
        #expect(rewritten("GET / HTTP/1.2\r\nHost: x\r\n\r\n") == "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(rewritten("GET / HTTP/1.9\n") == "GET / HTTP/1.1\n")
        #expect(rewritten("GET / HTTP/1.0\r\n") == "GET / HTTP/1.0\r\n")
        #expect(rewritten("GET / HTTP/2.0\r\n") == "GET / HTTP/2.0\r\n")
        #expect(rewritten("GET / HTTP/1.2") == "GET / HTTP/1.2")
        #expect(rewritten("GET /HTTP/1.2\r\n") == "GET /HTTP/1.2\r\n")
    }
}

/// A small seeded generator, so a failure repeats.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
