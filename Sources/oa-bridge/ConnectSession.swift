import BridgeClient
import BridgeRPC
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The prompt loop of `connect`: one session, prompts from `--prompt` or stdin, answers streamed to the terminal.
///
/// Reconnecting, resuming, escaping and the layout of the output are the library's (``BridgeClientSession``,
/// ``TurnTranscript``, ``PermissionQuestion``); this reads the terminal and prints.
final class ConnectSession: Sendable {
    let session: BridgeClientSession
    let json: Bool
    let approve: Bool
    let cwd: String
    /// Whether permission questions are asked on the terminal (stdin and stderr are one).
    let interactiveTerminal: Bool = isatty(STDIN_FILENO) != 0 && isatty(STDERR_FILENO) != 0
    private let saidNonInteractive = Mutex(false)
    let transcript = TurnTranscript { stream, text in
        switch stream {
        case .answer: FileHandle.standardOutput.write(Data(text.utf8))
        case .notes: FileHandle.standardError.write(Data(text.utf8))
        }
    }

    init(session: BridgeClientSession, json: Bool, approve: Bool, cwd: String) {
        self.session = session
        self.json = json
        self.approve = approve
        self.cwd = cwd
    }

    func runOnce(_ text: String) async throws {
        let sessionID = try await session.newSession(cwd: cwd)
        _ = try await send(text, sessionID: sessionID)
    }

    func runInteractive() async throws {
        var sessionID = try await session.newSession(cwd: cwd)
        FileHandle.standardError.write(Data("session \(TerminalText.escapedLine(sessionID)); type a prompt, Ctrl-D to quit\n".utf8))
        while true {
            FileHandle.standardError.write(Data("> ".utf8))
            guard let line = readLine() else { break }
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.isEmpty { continue }
            do {
                try await send(text, sessionID: sessionID)
                sessionID = session.currentSessionID(sessionID)
            } catch BridgeClientError.sessionReplaced(let old, let new, let reason) {
                // The bridge restarted and forgot the session: go on in the new one, and say so.
                let shown = new == old ? "a new session (the agent gave it the same id)" : "a new session \(TerminalText.escapedLine(new))"
                transcript.note("[session \(TerminalText.escapedLine(old)) is gone (\(reason)); the bridge probably restarted. "
                    + "Continuing in \(shown); the answer to that prompt was lost, send it again if you need it]")
                sessionID = new
            } catch BridgeClientError.gaveUp(let attempts, let reason) {
                // Typed while the bridge stays away: said plainly, and the next prompt tries again.
                transcript.note("[not sent: the bridge could not be reached after \(attempts) attempts (\(reason)); "
                    + "type the prompt again to retry]")
            } catch BridgeClientError.rpc(let error) {
                // The bridge's answer to this prompt (e.g. it restarted while the prompt ran): shown, and the session goes on.
                transcript.note("[error] \(TerminalText.escapedLine(error.message)) (\(error.code))")
            }
        }
    }

    /// One prompt; throws what the session throws (``BridgeClientError/sessionReplaced(old:new:reason:)`` included).
    private func send(_ text: String, sessionID: String) async throws {
        let transcript = self.transcript
        // Whatever ends the turn, the answer's line is ended first, so an error never glues onto it.
        defer { transcript.endTurn() }
        let stopReason = try await session.prompt(
            sessionID: sessionID, text: text, onUpdate: updatePrinter(), onPermission: permissionAnswerer()
        ) { event in
            switch event {
            case .retrying(let reason, let delay, let attempt, let of):
                let seconds = String(format: "%.1f s", Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18)
                transcript.note("[reconnecting \(attempt)\(of.map { "/\($0)" } ?? "") in \(seconds): \(reason)]")
            case .resuming(let after):
                transcript.note("[reconnected; resuming after update \(after)]")
            case .reloaded(let id):
                transcript.note("[reconnected; the bridge had forgotten session \(TerminalText.escapedLine(id)) and loaded it again]")
            case .resending(let recorded):
                transcript.note(recorded
                    ? "[the bridge restarted while the prompt ran; asking it how the prompt ended (its idempotency key: it is not run twice)]"
                    : "[the prompt had not reached the bridge; sending it now (once: it keeps its idempotency key)]")
            case .lostUpdates:
                transcript.note("[some of the answer may be missing: the bridge stopped unexpectedly before it saved its newest output]")
            case .replaced(let old, let new, let reason):
                transcript.note("[session \(TerminalText.escapedLine(old)) cannot go on (\(reason)); "
                    + "the prompt went to a new session \(TerminalText.escapedLine(new)) in the same directory]")
            }
        }
        transcript.endTurn()
        FileHandle.standardError.write(Data("[stop] \(stopReason.map(TerminalText.escapedLine) ?? "unknown: the prompt's end was not seen after the reconnect")\n".utf8))
    }

    private func updatePrinter() -> @Sendable (BridgeAgentClient.Update, Int) async -> Void {
        let json = self.json
        let transcript = self.transcript
        return { update, last in
            if json {
                // The JSON writer escapes C0; DEL, C1 and bidi controls are escaped here.
                print(TerminalText.jsonSafe(update.jsonObject(sequence: last).jsonText))
                fflushStandardOutput()
            } else {
                transcript.show(update)
            }
        }
    }

    private func permissionAnswerer() -> BridgeAgentClient.PermissionHandler {
        let approve = self.approve
        let interactive = self.interactiveTerminal && !json
        let transcript = self.transcript
        return { [self] request in
            let question = PermissionQuestion(request)
            let title = TerminalText.escapedLine(request.title)
            if approve {
                let choice = request.options.first { $0.kind == "allow_once" } ?? request.options.first { $0.kind.hasPrefix("allow") }
                transcript.note("[permission] \(title): \(choice.map { PermissionQuestion.label(kind: $0.kind) ?? $0.kind } ?? "cancelled (no allow option)") (--yes)")
                return choice?.id
            }
            guard interactive else {
                let choice = request.options.first { $0.kind.hasPrefix("reject") }
                let first = self.saidNonInteractive.withLock { said in
                    defer { said = true }
                    return !said
                }
                let why = first ? " (not a terminal, so permission requests are rejected without asking; use --yes to approve them)" : ""
                transcript.note("[permission] \(title): \(choice.map { PermissionQuestion.label(kind: $0.kind) ?? $0.kind } ?? "cancelled")\(why)")
                return choice?.id
            }
            while true {
                transcript.note(question.text)
                // The question's last line waits for the answer on the same line.
                let answer = question.answer(readLine())
                if case .chosen(let id) = answer {
                    let label = id.flatMap { id in request.options.first { $0.id == id } }.map { PermissionQuestion.label(kind: $0.kind) ?? $0.kind }
                    transcript.note("[permission] \(title): \(label ?? "cancelled")")
                    return id
                }
                transcript.note("[permission] not an answer: type a number from the list")
            }
        }
    }
}

/// Flushes `print`'s buffer so streamed output shows at once.
func fflushStandardOutput() {
    fflush(nil)
}
