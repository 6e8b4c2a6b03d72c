import Testing
@testable import BridgeTerminal

/// The output a terminal keeps for `terminal/output` and for the phones: the schema's `outputByteLimit`, cut from the
/// beginning at a UTF-8 character boundary.
@Suite("Terminal output buffer", .tags(.unit))
struct TerminalOutputBufferTests {
    @Test("under the limit nothing is dropped and truncated stays false")
    func underLimit() {
        var buffer = TerminalOutputBuffer(limit: 10)
        buffer.append(Array("hello".utf8))
        #expect(buffer.text(final: false) == "hello")
        #expect(!buffer.truncated)
    }

    @Test("past the limit the oldest bytes go, never half a character: what is kept may be less than the limit")
    func cutsAtCharacterBoundary() {
        // "aé€😀" is 61 | C3 A9 | E2 82 AC | F0 9F 98 80 (10 bytes).
        let bytes = Array("aé€😀".utf8)
        for limit in 0...10 {
            var buffer = TerminalOutputBuffer(limit: limit)
            buffer.append(bytes)
            let kept = buffer.text(final: true)
            #expect(kept.utf8.count <= limit, "limit \(limit): \(kept)")
            #expect(!kept.contains("\u{FFFD}"), "limit \(limit): never starts inside a character")
            #expect("aé€😀".hasSuffix(kept))
            #expect(buffer.truncated == (limit < 10))
        }
        var three = TerminalOutputBuffer(limit: 3)
        three.append(Array("abcéxy".utf8))
        #expect(three.text(final: true) == "xy", "the last 3 bytes begin inside é")
        var seven = TerminalOutputBuffer(limit: 7)
        seven.append(bytes)
        #expect(seven.text(final: true) == "€😀")
    }

    @Test("appends in small pieces keep exactly the tail, as one big append would")
    func manyAppends() {
        var buffer = TerminalOutputBuffer(limit: 1000)
        var all: [UInt8] = []
        for index in 0..<5000 {
            let piece = Array("line \(index) ü\n".utf8)
            all += piece
            buffer.append(piece)
        }
        var once = TerminalOutputBuffer(limit: 1000)
        once.append(all)
        #expect(buffer.text(final: true) == once.text(final: true))
        #expect(buffer.count <= 1000 && buffer.count > 990)
        #expect(buffer.text(final: true).hasSuffix("line 4999 ü\n"))
    }

    @Test("while the command runs an incomplete character at the end waits for its other bytes; at the end it is shown as U+FFFD")
    func incompleteTail() {
        var buffer = TerminalOutputBuffer(limit: 100)
        buffer.append([0x61, 0xE2, 0x82])
        #expect(buffer.text(final: false) == "a")
        #expect(buffer.text(final: true) == "a\u{FFFD}")
        buffer.append([0xAC])
        #expect(buffer.text(final: false) == "a€")
    }

    @Test("take hands over whole characters, keeps a split one for next time, and counts dropped bytes")
    func take() {
        var buffer = TerminalOutputBuffer(limit: 4)
        buffer.append(Array("0123456789".utf8))
        buffer.append([0xC3])
        let first = buffer.take(final: false)
        #expect(first.text == "789")
        #expect(first.dropped == 7)
        buffer.append([0xA9])
        let second = buffer.take(final: false)
        #expect(second.text == "é")
        #expect(second.dropped == 0)
        #expect(buffer.take(final: true).text == "")
    }
}
