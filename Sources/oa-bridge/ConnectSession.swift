import BridgeClient
import BridgeRPC
import Foundation
import Synchronization

/// The prompt loop of `connect`: one session, prompts from `--prompt` or stdin, answers streamed.
/// When the connection drops mid-prompt it reconnects with backoff and resumes the session, so
/// every update arrives exactly once, in order.
final class ConnectSession: Sendable {
    private let current: Mutex<BridgeAgentClient>
    private let reconnect: @Sendable () async throws -> BridgeAgentClient
    private let policy: ReconnectPolicy
    let json: Bool
    let approve: Bool
    let cwd: String

    init(client: BridgeAgentClient, json: Bool, approve: Bool, cwd: String, policy: ReconnectPolicy = ReconnectPolicy(maximumAttempts: 40),
         reconnect: @escaping @Sendable () async throws -> BridgeAgentClient) {
        self.current = Mutex(client)
        self.json = json
        self.approve = approve
        self.cwd = cwd
        self.policy = policy
        self.reconnect = reconnect
    }

    var client: BridgeAgentClient { current.withLock { $0 } }

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
        let seen = SequenceTracker()
        let onUpdate = updatePrinter(seen: seen)
        let onPermission = permissionAnswerer()
        var stopReason: String?
        do {
            stopReason = try await client.prompt(sessionID: sessionID, text: text, seen: seen, onUpdate: onUpdate, onPermission: onPermission)
        } catch BridgeClientError.connectionClosed(let reason) {
            stopReason = try await recover(sessionID: sessionID, seen: seen, reason: reason, onUpdate: onUpdate, onPermission: onPermission)
        }
        if !json { print("") }
        FileHandle.standardError.write(Data("[stop] \(stopReason ?? "unknown")\n".utf8))
    }

    /// Reconnects with backoff and resumes until the prompt's end is known.
    private func recover(
        sessionID: String, seen: SequenceTracker, reason: String,
        onUpdate: @escaping @Sendable (BridgeAgentClient.Update) async -> Void,
        onPermission: @escaping BridgeAgentClient.PermissionHandler
    ) async throws -> String? {
        var lastReason = reason
        var attempt = 0
        while let delay = policy.delay(forAttempt: attempt) {
            attempt += 1
            FileHandle.standardError.write(Data("[connection lost: \(lastReason); reconnecting in \(delay), attempt \(attempt)]\n".utf8))
            try await Task.sleep(for: delay)
            do {
                let fresh = try await reconnect()
                current.withLock { $0 = fresh }
                FileHandle.standardError.write(Data("[reconnected; resuming after update \(seen.last)]\n".utf8))
                return try await fresh.resume(sessionID: sessionID, seen: seen, onUpdate: onUpdate, onPermission: onPermission)
            } catch BridgeClientError.connectionClosed(let why) {
                lastReason = why
            } catch let error as BridgeClientError {
                lastReason = error.description
            }
        }
        throw BridgeClientError.connectionClosed("gave up after \(attempt) reconnect attempts: \(lastReason)")
    }

    private func updatePrinter(seen: SequenceTracker) -> @Sendable (BridgeAgentClient.Update) async -> Void {
        let json = self.json
        return { update in
            let sequence = JSONValue.int(Int64(seen.last))
            switch update {
            case .messageChunk(let chunk):
                if json {
                    print(JSONValue.object(["sessionUpdate": "agent_message_chunk", "seq": sequence, "text": .string(chunk)]).jsonText)
                } else {
                    FileHandle.standardOutput.write(Data(chunk.utf8))
                }
            case .thoughtChunk(let chunk):
                if json {
                    print(JSONValue.object(["sessionUpdate": "agent_thought_chunk", "seq": sequence, "text": .string(chunk)]).jsonText)
                } else {
                    FileHandle.standardError.write(Data("(thinking) \(chunk)\n".utf8))
                }
            case .toolCall(let id, let title, let status):
                if json {
                    print(JSONValue.object(["sessionUpdate": "tool_call", "seq": sequence, "toolCallId": .string(id), "title": .string(title), "status": .string(status)]).jsonText)
                } else {
                    FileHandle.standardError.write(Data("[tool \(id)] \(title) \(status)\n".utf8))
                }
            case .other(let kind, let payload):
                if json { print(JSONValue.object(["sessionUpdate": .string(kind), "seq": sequence, "update": payload]).jsonText) }
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
