public import BridgeRPC
import Foundation
import Synchronization

/// The ACP v1 client side of a bridge connection: `initialize`, `session/new`, `session/prompt`
/// with streamed `session/update`s, and answers to permission requests.
public final class BridgeAgentClient: Sendable {
    /// What the agent streamed during a prompt.
    public enum Update: Sendable {
        /// A piece of the agent's answer.
        case messageChunk(String)
        /// A piece of the agent's reasoning.
        case thoughtChunk(String)
        /// A tool call started or changed: id, title (empty when an update does not repeat it), status, and the text of
        /// its content when it has some (for a failed call, usually why).
        case toolCall(id: String, title: String, status: String, detail: String? = nil)
        /// Any other update, as received.
        case other(kind: String, payload: JSONValue)
    }

    /// A permission the agent asks for, with the options it offers.
    public struct PermissionRequest: Sendable {
        /// The tool call's title, for example "Read README.md".
        public var title: String
        /// `(optionId, name, kind)` per option; kinds are `allow_once`, `allow_always`, `reject_once`, `reject_always`.
        public var options: [(id: String, name: String, kind: String)]
    }

    /// How a permission request is answered: an option id, or `nil` to cancel.
    public typealias PermissionHandler = @Sendable (PermissionRequest) async -> String?

    /// The connection.
    public let connection: BridgeRPCClient
    private let listeners = ListenerRegistry()
    private let pump = Mutex<Task<Void, Never>?>(nil)

    /// Wraps a connection; one task reads what the bridge sends and hands it to the running prompts.
    public init(connection: BridgeRPCClient) {
        self.connection = connection
        let listeners = self.listeners
        let task = Task {
            for await message in connection.incoming {
                let targets = listeners.all()
                if targets.isEmpty, case .request(let request) = message {
                    // Nobody is prompting: an agent request cannot be answered by anyone.
                    connection.respond(to: request.id, error: .internalError("no prompt is running on this client"))
                }
                for target in targets { target.yield(message) }
            }
            for target in listeners.all() { target.finish() }
        }
        pump.withLock { $0 = task }
    }

    deinit {
        pump.withLock { $0?.cancel() }
    }

    /// A stream of what the bridge sends on its own, for as long as the caller iterates it.
    public func messages() -> AsyncStream<JSONRPCMessage> {
        let id = UUID()
        let (stream, continuation) = AsyncStream.makeStream(of: JSONRPCMessage.self, bufferingPolicy: .unbounded)
        let listeners = self.listeners
        continuation.onTermination = { _ in listeners.remove(id) }
        listeners.add(id, continuation)
        if connection.closedReason != nil { continuation.finish() }
        return stream
    }

    /// The ACP v1 `initialize` request parameters this client sends.
    public static func initializeParams(clientName: String, version: String) -> JSONValue {
        [
            "protocolVersion": 1,
            "clientCapabilities": ["fs": ["readTextFile": false, "writeTextFile": false], "terminal": false],
            "clientInfo": ["name": .string(clientName), "title": .string(clientName), "version": .string(version)],
        ]
    }

    /// Runs `initialize` (ACP v1) and returns the result.
    @discardableResult
    public func initialize(clientName: String = "oa-bridge-connect", version: String = "0.1.0", timeout: Duration = .seconds(10)) async throws -> JSONValue {
        try await connection.request("initialize", params: BridgeAgentClient.initializeParams(clientName: clientName, version: version), timeout: timeout)
    }

    /// Creates a session in `cwd` and returns its id.
    public func newSession(cwd: String) async throws -> String {
        let result = try await connection.request("session/new", params: ["cwd": .string(cwd), "mcpServers": []])
        guard let id = result["sessionId"]?.stringValue else {
            throw BridgeClientError.unexpectedAnswer("session/new returned no sessionId: \(result.jsonText)")
        }
        return id
    }

    /// Attaches to an existing session with `session/load` (the bridge forwards it to an agent that supports it; the
    /// agent replays the history).
    ///
    /// Throws the bridge's error when the session cannot be loaded.
    @discardableResult
    public func loadSession(_ sessionID: String, cwd: String) async throws -> JSONValue {
        try await connection.request(
            "session/load", params: ["sessionId": .string(sessionID), "cwd": .string(cwd), "mcpServers": []])
    }

    /// Sends a prompt and streams the updates to `onUpdate` until the turn ends; returns the stop reason.
    ///
    /// `idempotencyKey` goes in `_meta.oa.idempotencyKey`: a bridge that has seen the key never runs the prompt again
    /// and answers with the first one's outcome, so a prompt whose answer was lost with the link can be sent again.
    public func prompt(
        sessionID: String, text: String, idempotencyKey: String? = nil,
        seen: SequenceTracker = SequenceTracker(),
        onUpdate: @escaping @Sendable (Update) async -> Void,
        onPermission: @escaping PermissionHandler
    ) async throws -> String {
        let connection = self.connection
        var params: JSONValue = ["sessionId": .string(sessionID), "prompt": [["type": "text", "text": .string(text)]]]
        if let idempotencyKey, case .object(var members) = params {
            members["_meta"] = ["oa": ["idempotencyKey": .string(idempotencyKey)]]
            params = .object(members)
        }
        return try await turn(sessionID: sessionID, seen: seen, onUpdate: onUpdate, onPermission: onPermission) { [params] in
            let result = try await connection.request(
                "session/prompt",
                params: params,
                timeout: .seconds(3_600))
            return result["stopReason"]?.stringValue ?? "unknown"
        }
    }

    /// After a reconnect: reattaches to `sessionID` with `_oa/session/resume`, replaying the updates
    /// after the last one `seen` (each is delivered once), and follows the prompt that was running
    /// until it ends.
    ///
    /// Returns its stop reason, or `nil` when no prompt was running or finished. `onLost` hears the `seq` range
    /// the bridge says it may have lost (`lostUpdates`: it was killed before it stored them).
    public func resume(
        sessionID: String,
        seen: SequenceTracker,
        onUpdate: @escaping @Sendable (Update) async -> Void,
        onPermission: @escaping PermissionHandler,
        onLost: @escaping @Sendable (_ afterSeq: Int, _ throughSeq: Int) -> Void = { _, _ in }
    ) async throws -> String? {
        let connection = self.connection
        let outcome = try await turn(sessionID: sessionID, seen: seen, onUpdate: onUpdate, onPermission: onPermission) {
            let answer = try await connection.request(
                "_oa/session/resume", params: ["sessionId": .string(sessionID), "lastSeq": .int(Int64(seen.last))])
            if let lost = answer["lostUpdates"], let after = lost["afterSeq"]?.intValue, let through = lost["throughSeq"]?.intValue {
                onLost(Int(after), Int(through))
            }
            if let finished = answer["finishedWhileAway"]?.stringValue { return finished }
            if answer["promptRunning"]?.boolValue == true { return nil }  // wait for _oa/prompt_finished
            return "none"
        }
        return outcome == "none" ? nil : outcome
    }

    /// One turn: hands updates and permission requests to the callbacks until `ending` returns a
    /// stop reason, or (when it returns `nil`) until the bridge says the prompt finished.
    private func turn(
        sessionID: String, seen: SequenceTracker,
        onUpdate: @escaping @Sendable (Update) async -> Void,
        onPermission: @escaping PermissionHandler,
        ending: @escaping @Sendable () async throws -> String?
    ) async throws -> String {
        let connection = self.connection
        let messages = self.messages()
        let marker = "_oa/local/turn_end/\(UUID().uuidString)"
        return try await withThrowingTaskGroup(of: TurnEvent.self) { group in
            group.addTask {
                for await message in messages {
                    switch message {
                    case .notification(let notification) where notification.method == marker:
                        return .drained
                    case .notification(let notification) where notification.method == "session/update":
                        guard notification.params?["sessionId"]?.stringValue == sessionID,
                              let update = notification.params?["update"] else { continue }
                        let sequence = notification.params?["_meta"]?["seq"]?.intValue
                        guard seen.admit(sequence) else { continue }  // replayed twice: deliver once
                        await onUpdate(BridgeAgentClient.decode(update))
                    case .notification(let notification) where notification.method == "_oa/prompt_finished":
                        if notification.params?["sessionId"]?.stringValue == sessionID {
                            return .finishedNotice(notification.params?["stopReason"]?.stringValue ?? "unknown")
                        }
                    case .request(let request) where request.method == "session/request_permission":
                        let permission = BridgeAgentClient.decodePermission(request.params)
                        if let option = await onPermission(permission) {
                            connection.respond(to: request.id, result: ["outcome": ["outcome": "selected", "optionId": .string(option)]])
                        } else {
                            connection.respond(to: request.id, result: ["outcome": ["outcome": "cancelled"]])
                        }
                    case .request(let request):
                        connection.respond(to: request.id, error: .methodNotFound(request.method, detail: "this client does not serve \(request.method)"))
                    default:
                        continue
                    }
                }
                return .closed
            }
            group.addTask {
                if let stopReason = try await ending() { return .ended(stopReason) }
                // Keep the group alive until the listener sees the end of the prompt.
                while true { try await Task.sleep(for: .seconds(3_600)) }
            }
            defer { group.cancelAll() }
            var stopReason: String?
            while let event = try await group.next() {
                switch event {
                case .finishedNotice(let reason):
                    return stopReason ?? reason  // read in order: nothing can be behind it
                case .ended(let reason) where stopReason == nil:
                    // The answer can overtake updates still on their way to the listener: send a
                    // marker down the same ordered path and finish when it comes out.
                    stopReason = reason
                    connection.enqueueLocalMarker(marker)
                case .drained, .ended:
                    if let stopReason { return stopReason }
                case .closed:
                    if let stopReason { return stopReason }
                    throw BridgeClientError.connectionClosed(connection.closedReason ?? "before the prompt finished")
                }
            }
            throw BridgeClientError.connectionClosed(connection.closedReason ?? "before the prompt finished")
        }
    }

    /// Cancels the running prompt of a session (a notification, as ACP says).
    public func cancel(sessionID: String) {
        connection.notify("session/cancel", params: ["sessionId": .string(sessionID)])
    }

    static func decode(_ update: JSONValue) -> Update {
        let kind = update["sessionUpdate"]?.stringValue ?? "unknown"
        switch kind {
        case "agent_message_chunk":
            return .messageChunk(update["content"]?["text"]?.stringValue ?? "")
        case "agent_thought_chunk":
            return .thoughtChunk(update["content"]?["text"]?.stringValue ?? "")
        case "tool_call", "tool_call_update":
            // The text blocks of the content (`[{"type":"content","content":{"type":"text","text":…}}]`), joined.
            let texts = (update["content"]?.arrayValue ?? []).compactMap { item in
                item["content"]?["text"]?.stringValue ?? item["text"]?.stringValue
            }
            return .toolCall(id: update["toolCallId"]?.stringValue ?? "?",
                             title: update["title"]?.stringValue ?? "",
                             status: update["status"]?.stringValue ?? "",
                             detail: texts.isEmpty ? nil : texts.joined(separator: " "))
        default:
            return .other(kind: kind, payload: update)
        }
    }

    static func decodePermission(_ params: JSONValue?) -> PermissionRequest {
        let title = params?["toolCall"]?["title"]?.stringValue ?? "an action"
        let options = (params?["options"]?.arrayValue ?? []).compactMap { option -> (id: String, name: String, kind: String)? in
            guard let id = option["optionId"]?.stringValue else { return nil }
            return (id, option["name"]?.stringValue ?? id, option["kind"]?.stringValue ?? "")
        }
        return PermissionRequest(title: title, options: options)
    }
}

/// The per-prompt streams that want what the bridge sends.
private final class ListenerRegistry: Sendable {
    private let listeners = Mutex<[UUID: AsyncStream<JSONRPCMessage>.Continuation]>([:])

    func add(_ id: UUID, _ continuation: AsyncStream<JSONRPCMessage>.Continuation) {
        listeners.withLock { $0[id] = continuation }
    }

    func remove(_ id: UUID) {
        _ = listeners.withLock { $0.removeValue(forKey: id) }
    }

    func all() -> [AsyncStream<JSONRPCMessage>.Continuation] {
        listeners.withLock { Array($0.values) }
    }
}

/// The highest `session/update` sequence number seen for a session, so a resume asks for exactly
/// what was missed and a replayed update is delivered once.
public final class SequenceTracker: Sendable {
    private let highest = Mutex<Int>(0)

    /// Creates a tracker that has seen nothing.
    public init() {}

    /// The last sequence number delivered (0 before any).
    public var last: Int { highest.withLock { $0 } }

    /// Whether an update with `sequence` is new; records it.
    ///
    /// Updates without a number always pass.
    public func admit(_ sequence: Int64?) -> Bool {
        guard let sequence else { return true }
        return highest.withLock { highest in
            guard Int(sequence) > highest else { return false }
            highest = Int(sequence)
            return true
        }
    }
}

/// What a turn's child tasks report.
private enum TurnEvent: Sendable {
    /// The prompt's answer came with this stop reason.
    case ended(String)
    /// The bridge said the prompt finished (after a reconnect), in order with the updates.
    case finishedNotice(String)
    /// The listener has handed over everything received before the end.
    case drained
    /// The connection closed.
    case closed
}
