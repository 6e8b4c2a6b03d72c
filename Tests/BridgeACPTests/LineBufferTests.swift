@testable import BridgeACP
import Testing

@Suite("Splitting the agent's output into lines")
struct LineBufferTests {
    private func feed(_ buffer: inout LineBuffer, _ text: String) -> (lines: [String], dropped: Int) {
        var lines: [String] = []
        let bytes = Array(text.utf8)
        let dropped = bytes.withUnsafeBufferPointer { chunk in
            buffer.append(chunk) { lines.append(String(decoding: $0, as: UTF8.self)) }
        }
        return (lines, dropped)
    }

    @Test("lines split across chunks, CRLF, empty lines skipped, the unterminated rest at the end")
    func lines() {
        var buffer = LineBuffer(maxLineLength: 100)
        #expect(feed(&buffer, "one\ntw").lines == ["one"])
        #expect(feed(&buffer, "o\r\n\n\nthr").lines == ["two"])
        #expect(feed(&buffer, "ee\nfé").lines == ["three"])
        #expect(buffer.finish().map { String(decoding: $0, as: UTF8.self) } == "fé")
        #expect(buffer.finish() == nil)
    }

    @Test("a line growing past the limit is dropped whole and counted; the next line is kept")
    func overlong() {
        var buffer = LineBuffer(maxLineLength: 8)
        #expect(feed(&buffer, "0123456789").dropped == 1)
        #expect(feed(&buffer, "more of it").lines.isEmpty)
        let next = feed(&buffer, "still\nok\n")
        #expect(next.lines == ["ok"])
        #expect(next.dropped == 0)
        #expect(buffer.finish() == nil)
    }
}
