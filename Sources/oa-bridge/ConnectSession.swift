import BridgeClient
import BridgeRPC
import Foundation

/// The prompt loop of `connect`: one session, prompts from `--prompt` or stdin, answers streamed to the terminal.
/// Reconnecting and resuming is ``BridgeClientSession``'s; this prints what it reports.
struct ConnectSession: Sendable {
    let session: BridgeClientSession
    let json: Bool
    let approve: Bool
    let cwd: String

    func runOnce(_ text: String) async throws {
        let sessionID = try await session.newSession(cwd: cwd)
        try await send(text, sessionID: sessionID)
    }

    func runInteractive() async throws {
        let sessionID = try await session.newSession(cwd: cwd)
        FileHandle.standardError.write(Data("session \(sessionID); type a prompt, Ctrl-D to quit\n".utf8))
        while true {
            FileHandle.standardError.write(Data("> ".utf8))
            guard let line = readLine() else { break }
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.isEmpty { continue }
            try await send(text, sessionID: sessionID)
        }
    }

    private func send(_ text: String, sessionID: String) async throws {
        let stopReason = try await session.prompt(
            sessionID: sessionID, text: text, onUpdate: updatePrinter(), onPermission: permissionAnswerer()
        ) { event in
            switch event {
            case .retrying(let reason, let delay, let attempt):
                FileHandle.standardError.write(Data("[connection lost: \(reason); reconnecting in \(delay), attempt \(attempt)]\n".utf8))
            case .resuming(let after):
                FileHandle.standardError.write(Data("[reconnected; resuming after update \(after)]\n".utf8))
            }
        }
        if !json { print("") }
        FileHandle.standardError.write(Data("[stop] \(stopReason ?? "unknown")\n".utf8))
    }

    private func updatePrinter() -> @Sendable (BridgeAgentClient.Update, Int) async -> Void {
        let json = self.json
        return { update, last in
            if json {
                print(update.jsonObject(sequence: last).jsonText)
            } else {
                switch update {
                case .messageChunk(let chunk): FileHandle.standardOutput.write(Data(chunk.utf8))
                case .thoughtChunk(let chunk): FileHandle.standardError.write(Data("(thinking) \(chunk)\n".utf8))
                case .toolCall(let id, let title, let status): FileHandle.standardError.write(Data("[tool \(id)] \(title) \(status)\n".utf8))
                case .other: break
                }
            }
            fflushStandardOutput()
        }
    }

    private func permissionAnswerer() -> BridgeAgentClient.PermissionHandler {
        let approve = self.approve
        return { request in
            let choice = request.options.first { $0.kind.hasPrefix(approve ? "allow" : "reject") }
            FileHandle.standardError.write(Data("[permission] \(request.title): \(choice?.name ?? "cancelled")\(approve ? "" : " (use --yes to approve)")\n".utf8))
            return choice?.id
        }
    }
}

/// Flushes `print`'s buffer so streamed output shows at once.
func fflushStandardOutput() {
    fflush(nil)
}
