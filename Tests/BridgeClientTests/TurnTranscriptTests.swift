import BridgeRPC
import Synchronization
import Testing
@testable import BridgeClient

@Suite("connect's transcript: answer and notes apart, permission questions", .tags(.unit))
struct TurnTranscriptTests {
    /// A transcript and what it wrote so far, as one terminal would show it.
    static func transcript() -> (TurnTranscript, @Sendable () -> String) {
        let box = Box()
        let transcript = TurnTranscript { _, text in box.append(text) }
        return (transcript, { box.joined() })
    }

    final class Box: Sendable {
        let pieces = Mutex<[String]>([])
        func append(_ text: String) { pieces.withLock { $0.append(text) } }
        func joined() -> String { pieces.withLock { $0.joined() } }
    }

    @Test("a tool line after text that was mid-line starts on a line of its own; the answer goes on after it")
    func toolLineApart() {
        let (transcript, screen) = TurnTranscriptTests.transcript()
        transcript.show(.messageChunk("You said: "))
        transcript.show(.messageChunk("hi"))
        transcript.show(.toolCall(id: "t1", title: "Tell the time", status: "pending"))
        transcript.show(.toolCall(id: "t1", title: "", status: "completed"))
        transcript.show(.messageChunk(" (The time is now.)"))
        transcript.endTurn()
        #expect(screen() == "You said: hi\n[tool Tell the time] pending\n[tool Tell the time] completed\n (The time is now.)\n")
    }

    @Test("a failed tool call says why, from its content; without content it says the agent gave no reason")
    func failedWithReason() {
        #expect(TurnTranscript.toolLine(name: "Tell the time", status: "failed", detail: "Not run: permission was not given.")
            == "[tool Tell the time] failed: Not run: permission was not given.")
        #expect(TurnTranscript.toolLine(name: "Run", status: "failed", detail: nil) == "[tool Run] failed (the agent gave no reason)")
        #expect(!TurnTranscript.toolLine(name: "x", status: "failed", detail: nil).hasSuffix("failed"))
    }

    @Test("tool titles, thoughts and answers are escaped")
    func escaped() {
        let (transcript, screen) = TurnTranscriptTests.transcript()
        transcript.show(.toolCall(id: "t\u{1B}]0;x\u{07}", title: "Read\u{1B}[2J", status: "pending"))
        transcript.show(.thoughtChunk("hmm\u{9B}"))
        transcript.show(.messageChunk("\u{1B}]52;c;aGk=\u{07}"))
        #expect(!screen().unicodeScalars.contains(where: TerminalText.needsEscape))
    }

    @Test("the tool's content text is decoded into the update's detail")
    func detailDecoded() {
        let update: JSONValue = [
            "sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "failed",
            "content": [["type": "content", "content": ["type": "text", "text": "Not run."]]],
        ]
        guard case .toolCall(let id, let title, let status, let detail) = BridgeAgentClient.decode(update) else {
            Issue.record("not a tool call")
            return
        }
        #expect(id == "t1" && title.isEmpty && status == "failed" && detail == "Not run.")
    }

    static let request = BridgeAgentClient.PermissionRequest(title: "Tell the time", options: [
        (id: "allow", name: "Deny", kind: "allow_once"),  // an agent may name an option anything: the kind decides
        (id: "always", name: "Always", kind: "allow_always"),
        (id: "reject", name: "Reject", kind: "reject_once"),
    ])

    @Test("the question labels each option by its kind, with the agent's name only beside it")
    func questionText() {
        let text = PermissionQuestion(TurnTranscriptTests.request).text
        #expect(text.contains("1) Allow once  (the agent calls it \"Deny\")"))
        #expect(text.contains("2) Always allow"))
        #expect(text.contains("3) Reject"))
        #expect(text.contains("choose 1-3 (Enter: 3)"))
    }

    @Test("answers: a number, a word, Enter or end of input rejects, anything else asks again")
    func answers() {
        let question = PermissionQuestion(TurnTranscriptTests.request)
        #expect(question.answer("1") == .chosen("allow"))
        #expect(question.answer(" 2 ") == .chosen("always"))
        #expect(question.answer("a") == .chosen("allow"))
        #expect(question.answer("always") == .chosen("always"))
        #expect(question.answer("r") == .chosen("reject"))
        #expect(question.answer("") == .chosen("reject"))
        #expect(question.answer(nil) == .chosen("reject"))
        #expect(question.answer("9") == .invalid)
        #expect(question.answer("please") == .invalid)
        let noReject = PermissionQuestion(.init(title: "x", options: [(id: "ok", name: "OK", kind: "allow_once")]))
        #expect(noReject.answer("") == .chosen(nil))
    }
}
