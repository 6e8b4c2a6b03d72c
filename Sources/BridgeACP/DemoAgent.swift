public import BridgeRPC
import Foundation
public import Logging
import Synchronization

/// The built-in demo agent, so that `oa-bridge serve` works with nothing installed.
///
/// It speaks official ACP in-process. On `session/prompt` it streams the prompt back as `agent_message_chunk`
/// updates, shows a harmless `tool_call` ("Tell the time"), asks `session/request_permission` for it, reports the
/// outcome as a `tool_call_update`, and answers `stopReason: "end_turn"` (or `"cancelled"` after `session/cancel`).
/// In the Quiet mode (`session/set_mode` to `quiet`) it only echoes: no tool call, no permission question.
/// It also answers `session/set_mode`, and `session/close` by forgetting the session (it advertises
/// `sessionCapabilities.close`, so a bridge that drops an idle session releases the demo's side too).
public final class DemoAgent: ACPAgent {
    /// How the demo agent introduces itself in `initialize`.
    public static let info = AgentInfo(name: "oa-bridge-demo-agent", title: "oa-bridge demo agent", version: "0.1.0")

    /// What the demo agent sends; see ``ACPAgent/events``.
    public let events: AsyncStream<ACPAgentEvent>
    private let eventSink: AsyncStream<ACPAgentEvent>.Continuation
    private let inbox: AsyncStream<JSONRPCMessage>
    private let inboxSink: AsyncStream<JSONRPCMessage>.Continuation
    private let outstanding = OutstandingRequests()
    private let state = Mutex(State())
    private let chunkDelay: Duration
    private let logger: Logger
    /// This instance's part of its session ids (8 random hex digits).
    private let instance = String(UInt32.random(in: .min ... .max), radix: 16)

    private struct State {
        var nextSession = 1
        var nextRequest: Int64 = 1
        var cancelled: Set<String> = []
        var sessions: Set<String> = []
        /// Sessions switched to the Quiet mode (`session/set_mode` `quiet`): they echo and ask nothing.
        var quiet: Set<String> = []
        var waiting: [JSONRPCID: CheckedContinuation<JSONRPCResponse?, Never>] = [:]
        var stopped = false
    }

    /// Creates the demo agent; `chunkDelay` is the pause between streamed chunks.
    public init(chunkDelay: Duration = .milliseconds(20), logger: Logger = Logger(label: "oa-bridge.demo-agent")) {
        (events, eventSink) = AsyncStream.makeStream(of: ACPAgentEvent.self)
        (inbox, inboxSink) = AsyncStream.makeStream(of: JSONRPCMessage.self)
        self.chunkDelay = chunkDelay
        self.logger = logger
    }

    /// Handles messages until the calling task is cancelled.
    public func run() async {
        await withDiscardingTaskGroup { group in
            for await message in inbox {
                switch message {
                case .request(let request):
                    group.addTask { await self.answer(request) }
                case .notification(let notification):
                    handle(notification)
                case .response(let response):
                    let waiter = state.withLock { $0.waiting.removeValue(forKey: response.id) }
                    waiter?.resume(returning: response)
                }
            }
            // Stopping: release prompts waiting for a client's answer, so that the group can end.
            let waiters = state.withLock { state in
                state.stopped = true
                defer { state.waiting.removeAll() }
                return Array(state.waiting.values)
            }
            for waiter in waiters { waiter.resume(returning: nil) }
            group.cancelAll()
        }
        for response in outstanding.failAll(reason: "the demo agent stopped") { eventSink.yield(.message(response)) }
        eventSink.yield(.exited(reason: "the demo agent stopped"))
        eventSink.finish()
    }

    /// Queues a message for the demo agent.
    public func send(_ message: JSONRPCMessage) throws(ACPAgentError) {
        if state.withLock({ $0.stopped }) { throw ACPAgentError.notRunning("the demo agent stopped") }
        outstanding.sent(message)
        inboxSink.yield(message)
    }

    /// Stops the demo agent: ``run()`` fails what is pending, emits `.exited` and returns.
    public func stop() async {
        inboxSink.finish()
    }

    private func emit(_ message: JSONRPCMessage) {
        outstanding.received(message)
        eventSink.yield(.message(message))
    }

    private func reply(_ request: JSONRPCRequest, _ outcome: Result<JSONValue, JSONRPCError>) {
        emit(.response(JSONRPCResponse(id: request.id, outcome: outcome)))
    }

    private func handle(_ notification: JSONRPCNotification) {
        guard notification.method == ACPMethod.sessionCancel, let session = notification.params?["sessionId"]?.stringValue else { return }
        state.withLock { _ = $0.cancelled.insert(session) }
    }

    private func answer(_ request: JSONRPCRequest) async {
        switch request.method {
        case ACPMethod.initialize:
            reply(request, .success([
                "protocolVersion": .int(ACPDialect.officialVersion),
                // session/close lets the bridge release a session it stopped keeping (and the demo forget it).
                "agentCapabilities": ["sessionCapabilities": ["close": [:]]],
                "authMethods": [],
                "agentInfo": DemoAgent.info.jsonValue,
            ]))
        case ACPMethod.sessionNew:
            let id = state.withLock { state in
                defer { state.nextSession += 1 }
                // Unique across restarts (a random part): the bridge keeps sessions from before a restart, and a new
                // session must never take a kept one's id (issue 25).
                let id = "demo-session-\(state.nextSession)-\(instance)"
                state.sessions.insert(id)
                return id
            }
            reply(request, .success([
                "sessionId": .string(id),
                "modes": [
                    "currentModeId": "default",
                    "availableModes": [
                        ["id": "default", "name": "Default", "description": "Echo the prompt and ask before acting"],
                        ["id": "quiet", "name": "Quiet", "description": "Echo the prompt only"],
                    ],
                ],
            ]))
        case ACPMethod.sessionSetMode:
            guard let session = knownSession(request), let mode = request.params?["modeId"]?.stringValue,
                  ["default", "quiet"].contains(mode) else {
                reply(request, .failure(.invalidParams("session/set_mode needs a known sessionId and a modeId (default or quiet)")))
                return
            }
            state.withLock { state in
                if mode == "quiet" { state.quiet.insert(session) } else { state.quiet.remove(session) }
            }
            emit(.notification(JSONRPCNotification(method: ACPMethod.sessionUpdate, params: [
                "sessionId": .string(session),
                "update": ["sessionUpdate": "current_mode_update", "currentModeId": .string(mode)],
            ])))
            reply(request, .success([:]))
        case ACPMethod.sessionClose:
            guard let session = knownSession(request) else {
                reply(request, .failure(.invalidParams("session/close needs a known sessionId")))
                return
            }
            state.withLock { state in
                state.sessions.remove(session)
                state.cancelled.remove(session)
                state.quiet.remove(session)
            }
            reply(request, .success([:]))
        case ACPMethod.sessionPrompt:
            guard let session = knownSession(request), let prompt = request.params?["prompt"]?.arrayValue else {
                reply(request, .failure(.invalidParams("session/prompt needs a known sessionId and a prompt array")))
                return
            }
            let stopReason = await runPrompt(session: session, prompt: prompt)
            reply(request, .success(["stopReason": .string(stopReason)]))
        default:
            reply(request, .failure(.methodNotFound(request.method, detail: "the demo agent does not implement it")))
        }
    }

    private func knownSession(_ request: JSONRPCRequest) -> String? {
        guard let session = request.params?["sessionId"]?.stringValue else { return nil }
        return state.withLock { $0.sessions.contains(session) } ? session : nil
    }

    private func update(_ session: String, _ update: JSONValue) {
        emit(.notification(JSONRPCNotification(method: ACPMethod.sessionUpdate, params: ["sessionId": .string(session), "update": update])))
    }

    private func isCancelled(_ session: String) -> Bool {
        state.withLock { $0.cancelled.contains(session) } || Task.isCancelled
    }

    /// The prompt turn; returns the stop reason.
    private func runPrompt(session: String, prompt: [JSONValue]) async -> String {
        state.withLock { _ = $0.cancelled.remove(session) }
        let text = prompt.compactMap { block in block["type"] == "text" ? block["text"]?.stringValue : nil }.joined(separator: "\n")
        let echo = "You said: " + (text.isEmpty ? "(no text)" : text)
        var words = echo.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        for index in words.indices.dropLast() { words[index] += " " }
        for word in words {
            if isCancelled(session) { return "cancelled" }
            update(session, ["sessionUpdate": "agent_message_chunk", "content": ["type": "text", "text": .string(word)]])
            try? await Task.sleep(for: chunkDelay)
        }
        // Quiet: "Echo the prompt only", as the mode says; nothing to allow (issue 29 item 9).
        if state.withLock({ $0.quiet.contains(session) }) { return "end_turn" }
        let toolCallID = "demo-tool-\(UUID().uuidString.prefix(8))"
        let toolCall: JSONValue = [
            "toolCallId": .string(toolCallID), "title": "Tell the time", "kind": "other", "status": "pending",
            "rawInput": ["action": "read the system clock"],
        ]
        var announced = toolCall.objectValue ?? [:]
        announced["sessionUpdate"] = "tool_call"
        update(session, .object(announced))
        if isCancelled(session) { return "cancelled" }

        let requestID: JSONRPCID = .int(state.withLock { state in
            defer { state.nextRequest += 1 }
            return state.nextRequest
        })
        let permission = JSONRPCRequest(id: requestID, method: ACPMethod.requestPermission, params: [
            "sessionId": .string(session),
            "toolCall": ["toolCallId": .string(toolCallID), "title": "Tell the time", "kind": "other", "status": "pending"],
            "options": [
                ["optionId": "allow", "name": "Allow once", "kind": "allow_once"],
                ["optionId": "reject", "name": "Reject", "kind": "reject_once"],
            ],
        ])
        let answer = await ask(permission)
        let outcome = answer?.result?["outcome"]
        let selected = outcome?["outcome"] == "selected" ? outcome?["optionId"]?.stringValue : nil
        if outcome?["outcome"] == "cancelled" || isCancelled(session) {
            update(session, ["sessionUpdate": "tool_call_update", "toolCallId": .string(toolCallID), "status": "failed"])
            return "cancelled"
        }
        if selected == "allow" {
            let now = ISO8601DateFormatter().string(from: Date())
            update(session, [
                "sessionUpdate": "tool_call_update", "toolCallId": .string(toolCallID), "status": "completed",
                "content": [["type": "content", "content": ["type": "text", "text": .string("It is \(now).")]]],
                "rawOutput": ["time": .string(now)],
            ])
            update(session, ["sessionUpdate": "agent_message_chunk", "content": ["type": "text", "text": .string(" (The time is \(now).)")]])
        } else {
            let why = answer?.error.map { "the client answered with an error: \($0.message)" } ?? "permission was not given"
            update(session, [
                "sessionUpdate": "tool_call_update", "toolCallId": .string(toolCallID), "status": "failed",
                "content": [["type": "content", "content": ["type": "text", "text": .string("Not run: \(why).")]]],
            ])
        }
        return "end_turn"
    }

    /// Sends a request to the client and waits for its answer (`nil` if the agent stops first).
    private func ask(_ request: JSONRPCRequest) async -> JSONRPCResponse? {
        await withCheckedContinuation { continuation in
            let stopped = state.withLock { state in
                if state.stopped { return true }
                state.waiting[request.id] = continuation
                return false
            }
            if stopped {
                continuation.resume(returning: nil)
            } else {
                eventSink.yield(.message(.request(request)))
            }
        }
    }
}
