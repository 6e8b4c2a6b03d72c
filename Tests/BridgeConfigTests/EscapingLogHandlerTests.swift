import BridgeConfig
import BridgeTestKit
import Logging
import Testing

/// Issue 27 item 10: no message or metadata value makes a line of its own in the text log.
@Suite("Log lines escape control characters", .tags(.unit))
struct EscapingLogHandlerTests {
    /// Each line as the text handler would write it: the message, then `key=value` sorted by key.
    static func lines(_ log: TestLog) -> [String] {
        log.all.map { entry in
            ([entry.message] + entry.metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }).joined(separator: " ")
        }
    }

    @Test("a newline, a carriage return, an escape sequence and U+2028 in a value stay on the line, escaped")
    func escaped() {
        let log = TestLog()
        var logger = Logger(label: "test") { _ in EscapingLogHandler(wrapping: log.handler()) }
        logger[metadataKey: "handler"] = "a\nb"
        logger.info("line\none", metadata: [
            "session": "s1\n2026-11-26T00:00:00+0000 critical forged", "cr": "x\r\ny", "esc": "\u{1B}[2J", "sep": "p\u{2028}q",
            "nested": ["k": "v\nw"], "list": ["i\tj"], "plain": "no controls: é ü 日本",
        ])
        let line = Self.lines(log).joined(separator: "|")
        #expect(!line.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x2028 || $0.value == 0x7F }, "\(line)")
        #expect(line.contains(#"line\none"#) && line.contains(#"s1\n2026-11-26"#) && line.contains(#"x\r\ny"#))
        #expect(line.contains(#"\u{1b}[2J"#) && line.contains(#"p\u{2028}q"#) && line.contains(#"handler=a\nb"#))
        #expect(line.contains("no controls: é ü 日本"))
    }

    @Test("text without control characters is written unchanged")
    func unchanged() {
        #expect(EscapingLogHandler<StreamLogHandler>.escape("session s-1 attached, ok: ✓") == "session s-1 attached, ok: ✓")
        #expect(EscapingLogHandler<StreamLogHandler>.escape("a\u{85}b\u{7F}") == #"a\u{85}b\u{7f}"#)
    }
}
