import NIOCore
import Testing
@testable import BridgeACP

@Suite("Cutting the agent's output into lines", .tags(.unit))
struct LineFramerTests {
    /// Feeds `text` as one more chunk (the unread rest of earlier chunks stays in `buffer`, as in NIO's decoder).
    private func feed(_ framer: inout LineFramer, _ buffer: inout ByteBuffer, _ text: String) -> [AgentLine] {
        buffer.writeString(text)
        var out: [AgentLine] = []
        while let line = framer.next(&buffer) { out.append(line) }
        return out
    }

    private func text(_ lines: [AgentLine]) -> [String] {
        lines.map { line in
            switch line {
            case .line(let bytes): String(buffer: bytes)
            case .overlong: "<overlong>"
            }
        }
    }

    @Test("lines split across chunks, CRLF, empty lines skipped, the unterminated rest at the end")
    func lines() {
        var framer = LineFramer(maxLineLength: 100)
        var buffer = ByteBuffer()
        #expect(text(feed(&framer, &buffer, "one\ntw")) == ["one"])
        #expect(text(feed(&framer, &buffer, "o\r\n\n\nthr")) == ["two"])
        #expect(text(feed(&framer, &buffer, "ee\nfé")) == ["three"])
        #expect(text(framer.finish(&buffer).map { [$0] } ?? []) == ["fé"])
        #expect(framer.finish(&buffer) == nil)
    }

    @Test("a line growing past the limit is dropped whole and reported once; the next line is kept")
    func overlongAcrossChunks() {
        var framer = LineFramer(maxLineLength: 8)
        var buffer = ByteBuffer()
        #expect(text(feed(&framer, &buffer, "0123456789")) == ["<overlong>"])
        #expect(feed(&framer, &buffer, "more of it").isEmpty)
        #expect(text(feed(&framer, &buffer, "still\nok\n")) == ["ok"])
        #expect(framer.finish(&buffer) == nil)
        #expect(buffer.readableBytes == 0)
    }

    @Test("a line over the limit that arrives whole is dropped too; one at the limit is kept")
    func overlongInOneChunk() {
        var framer = LineFramer(maxLineLength: 8)
        var buffer = ByteBuffer()
        #expect(text(feed(&framer, &buffer, "123456789\n12345678\n")) == ["<overlong>", "12345678"])
    }

    @Test("an over-long unterminated rest at the end is not delivered")
    func overlongAtEnd() {
        var framer = LineFramer(maxLineLength: 4)
        var buffer = ByteBuffer()
        #expect(text(feed(&framer, &buffer, "ok\n1234567")) == ["ok", "<overlong>"])
        #expect(framer.finish(&buffer) == nil)
    }

    @Test("a long line read in many small chunks comes out whole")
    func manyChunks() {
        var framer = LineFramer(maxLineLength: 1 << 20)
        var buffer = ByteBuffer()
        let piece = String(repeating: "x", count: 1000)
        for _ in 0..<500 { #expect(feed(&framer, &buffer, piece).isEmpty) }
        let lines = feed(&framer, &buffer, "\n")
        guard case .line(let bytes)? = lines.first else {
            Issue.record("no line")
            return
        }
        #expect(lines.count == 1)
        #expect(bytes.readableBytes == 500_000)
    }
}
