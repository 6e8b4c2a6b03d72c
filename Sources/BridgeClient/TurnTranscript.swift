import Synchronization

/// How `oa-bridge connect` shows a turn on a terminal: the agent's answer on standard output as it streams, and
/// everything else (thinking, tool calls, permissions, reconnects) as whole lines on standard error, never glued to the
/// answer.
///
/// Every piece of text from the agent or the bridge is escaped (``TerminalText``) before it is handed out.
///
/// The transcript keeps what a line-oriented view needs: whether the answer is mid-line (then a newline ends it before
/// a note), and each tool call's title (updates often repeat only the id and the status).
///
/// ```swift
/// let transcript = TurnTranscript { stream, text in write(text, to: stream) }
/// transcript.show(update)                // from onUpdate
/// transcript.note("[reconnecting …]")    // any line of our own
/// transcript.endTurn()
/// ```
public final class TurnTranscript: Sendable {
    /// Where a piece of text goes.
    public enum Stream: Sendable, Hashable {
        /// The answer (standard output).
        case answer
        /// Notes: tool calls, thinking, permissions, reconnects (standard error).
        case notes
    }

    private struct State {
        var answerMidLine = false
        var titles: [String: String] = [:]
        var thinking = false
    }

    private let state = Mutex(State())
    private let write: @Sendable (Stream, String) -> Void

    /// A transcript that hands its text to `write`, in order.
    public init(write: @escaping @Sendable (Stream, String) -> Void) {
        self.write = write
    }

    /// Shows one update.
    public func show(_ update: BridgeAgentClient.Update) {
        switch update {
        case .messageChunk(let chunk):
            let text = TerminalText.escaped(chunk)
            guard !text.isEmpty else { return }
            state.withLock { state in
                state.thinking = false
                state.answerMidLine = !text.hasSuffix("\n")
            }
            write(.answer, text)
        case .thoughtChunk(let chunk):
            let text = TerminalText.escapedLine(chunk)
            guard !text.isEmpty else { return }
            note("(thinking) \(text)")
        case .toolCall(let id, let title, let status, let detail):
            let name: String = state.withLock { state in
                if !title.isEmpty { state.titles[id] = title }
                return state.titles[id] ?? id
            }
            note(TurnTranscript.toolLine(name: name, status: status, detail: detail))
        case .other:
            break
        }
    }

    /// A line of our own (already escaped where it quotes the bridge): on a line of its own, after ending the
    /// answer's line if it was mid-line.
    public func note(_ line: String) {
        let endAnswerLine = state.withLock { state in
            defer { state.answerMidLine = false }
            return state.answerMidLine
        }
        if endAnswerLine { write(.answer, "\n") }
        write(.notes, line.hasSuffix("\n") ? line : line + "\n")
    }

    /// Ends the turn: the answer's last line is ended.
    public func endTurn() {
        let endAnswerLine = state.withLock { state in
            defer { state.answerMidLine = false }
            return state.answerMidLine
        }
        if endAnswerLine { write(.answer, "\n") }
    }

    /// `[tool Read README.md] completed`, `[tool Tell the time] failed: Not run: permission was not given.`;
    /// a failure without a reason from the agent says so instead of a bare "failed".
    static func toolLine(name: String, status: String, detail: String?) -> String {
        let shownName = TerminalText.escapedLine(name)
        let shownStatus = status.isEmpty ? "updated" : TerminalText.escapedLine(status)
        let shownDetail = detail.map(TerminalText.escapedLine).flatMap { $0.isEmpty ? nil : $0 }
        switch (status, shownDetail) {
        case ("failed", nil):
            return "[tool \(shownName)] failed (the agent gave no reason)"
        case ("failed", let detail?):
            return "[tool \(shownName)] failed: \(TurnTranscript.clipped(detail))"
        case ("completed", _), (_, nil):
            return "[tool \(shownName)] \(shownStatus)"
        case (_, let detail?):
            return "[tool \(shownName)] \(shownStatus): \(TurnTranscript.clipped(detail))"
        }
    }

    /// At most 200 characters of a detail, so a tool's whole output does not flood the notes.
    static func clipped(_ text: String) -> String {
        text.count <= 200 ? text : String(text.prefix(199)) + "…"
    }
}
