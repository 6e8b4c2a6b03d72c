import Testing
@testable import BridgeClient

@Suite("Terminal text from the agent", .tags(.unit))
struct TerminalTextTests {
    /// Whether `text` holds anything a terminal would act on other than a newline or a tab.
    static func hasControl(_ text: String) -> Bool {
        text.unicodeScalars.contains(where: TerminalText.needsEscape)
    }

    @Test("the probe's three sequences never reach the terminal: OSC 0 title, CSI 2J clear, OSC 52 clipboard")
    func probeSequences() {
        let hostile = "before\u{1B}]0;owned\u{07}\u{1B}[2J\u{1B}]52;c;ZWNobyBoaQ==\u{1B}\\after"
        let shown = TerminalText.escaped(hostile)
        #expect(!shown.contains("\u{1B}") && !shown.contains("\u{07}"))
        #expect(shown == "before^[]0;owned^G^[[2J^[]52;c;ZWNobyBoaQ==^[\\after")
    }

    @Test("every C0 control but newline and tab, DEL, and every C1 control is shown, not sent")
    func allControls() {
        for value in UInt32(0)...0x9F where !(0x20...0x7E).contains(value) && value != 0x0A && value != 0x09 {
            let scalar = Unicode.Scalar(value)!
            let shown = TerminalText.escaped("a\(Character(scalar))b")
            #expect(!TerminalTextTests.hasControl(shown), "U+\(String(value, radix: 16)) reached the terminal")
            #expect(shown.hasPrefix("a") && shown.hasSuffix("b") && shown.count > 3)
        }
        #expect(TerminalText.escaped("\u{9B}31m") == "<U+009B>31m")
        #expect(TerminalText.escaped("\u{7F}") == "^?")
    }

    @Test("newlines, tabs and ordinary text (accents, CJK, emoji) pass unchanged; CR LF becomes LF; a lone CR is shown")
    func ordinaryText() {
        let text = "line one\n\tindented — é 漢字 🙂\n"
        #expect(TerminalText.escaped(text) == text)
        #expect(TerminalText.escaped("a\r\nb") == "a\nb")
        #expect(TerminalText.escaped("progress 10%\rfake line") == "progress 10%^Mfake line")
    }

    @Test("bidirectional overrides and isolates are shown, so a name reads in its real order")
    func bidi() {
        let shown = TerminalText.escaped("invoice\u{202E}fdp.exe and \u{2066}x\u{2069}")
        #expect(shown == "invoice<U+202E>fdp.exe and <U+2066>x<U+2069>")
    }

    @Test("a sequence split across streamed chunks is harmless: each chunk is escaped on its own")
    func splitChunks() {
        let chunks = ["text \u{1B}", "]0;title\u{07}", " more \u{9B}", "2J"]
        let shown = chunks.map(TerminalText.escaped).joined()
        #expect(!TerminalTextTests.hasControl(shown))
        #expect(shown == "text ^[]0;title^G more <U+009B>2J")
    }

    @Test("JSON lines keep their value and lose every control character: DEL, C1 and bidi as \\uXXXX")
    func json() {
        let line = #"{"text":"a\u001b]0;x\u0007"# + "\u{7F}\u{9B}\u{202E}" + #""}"#
        let safe = TerminalText.jsonSafe(line)
        #expect(safe == #"{"text":"a\u001b]0;x\u0007\u007f\u009b\u202e"}"#)
        #expect(!TerminalTextTests.hasControl(safe))
    }

    @Test("a line for a title or reason keeps to one line")
    func oneLine() {
        #expect(TerminalText.escapedLine("Read\nfile\t\u{1B}[31m") == "Read^Jfile ^[[31m")
    }
}
