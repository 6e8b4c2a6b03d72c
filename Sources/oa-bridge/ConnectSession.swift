import BridgeClient
import BridgeRPC
import Foundation

/// The prompt loop of `connect`: one session, prompts from `--prompt` or stdin, answers streamed.
struct ConnectSession: Sendable {
    let client: BridgeAgentClient
    let json: Bool
    let approve: Bool
    let cwd: String

    func runOnce(_ text: String) async throws {
        let sessionID = try await client.newSession(cwd: cwd)
        try await send(text, sessionID: sessionID)
    }

    func runInteractive() async throws {
        let sessionID = try await client.newSession(cwd: cwd)
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
        let json = self.json
        let approve = self.approve
        let stopReason = try await client.prompt(sessionID: sessionID, text: text) { update in
            switch update {
            case .messageChunk(let chunk):
                if json {
                    print(JSONValue.object(["sessionUpdate": "agent_message_chunk", "text": .string(chunk)]).jsonText)
                } else {
                    FileHandle.standardOutput.write(Data(chunk.utf8))
                }
            case .thoughtChunk(let chunk):
                if json {
                    print(JSONValue.object(["sessionUpdate": "agent_thought_chunk", "text": .string(chunk)]).jsonText)
                } else {
                    FileHandle.standardError.write(Data("(thinking) \(chunk)\n".utf8))
                }
            case .toolCall(let id, let title, let status):
                if json {
                    print(JSONValue.object(["sessionUpdate": "tool_call", "toolCallId": .string(id), "title": .string(title), "status": .string(status)]).jsonText)
                } else {
                    FileHandle.standardError.write(Data("[tool \(id)] \(title) \(status)\n".utf8))
                }
            case .other(let kind, let payload):
                if json { print(#"{"sessionUpdate":"\#(kind)","update":\#(payload.jsonText)}"#) }
            }
        } onPermission: { request in
            let choice = request.options.first { $0.kind.hasPrefix(approve ? "allow" : "reject") }
            FileHandle.standardError.write(Data("[permission] \(request.title): \(choice?.name ?? "cancelled")\(approve ? "" : " (use --yes to approve)")\n".utf8))
            return choice?.id
        }
        if !json { print("") }
        FileHandle.standardError.write(Data("[stop] \(stopReason)\n".utf8))
    }
}
