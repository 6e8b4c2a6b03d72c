public import BridgeACP
public import BridgeRPC
import Synchronization

/// An ACP agent in the test's own process, scripted by a closure (``BridgeServerConfiguration/inProcessAgent``): no
/// process, no pipes and no interpreter to start, so its timing is the test's, not a loaded machine's.
///
/// Every message the bridge sends is handed to the script with a ``Peer`` to answer through, one after the other in
/// the order they were sent, as a process reads its input: a script that holds an answer back (a slow `initialize`)
/// holds the messages behind it too.
///
/// Like a process: a request still unanswered when the agent ends gets an error response, then `.exited` comes last.
/// Like a process whose pipes close before it ends, it can stop reading (``Peer/stopReading()``: what is sent to it
/// then fails as a write to a closed pipe does, and ``takeUndelivered(_:)`` gives those requests back) or stop writing
/// (``Peer/stopWriting()``) while it has not ended: ``endReason`` says so before any `.exited`.
public final class ScriptedAgent: ACPAgent {
    /// What a script answers through.
    public struct Peer: Sendable {
        fileprivate let agent: ScriptedAgent

        /// Answers request `id` with `result`.
        public func respond(to id: JSONRPCID, result: JSONValue) {
            agent.emit(.response(JSONRPCResponse(id: id, result: result)))
        }

        /// Answers request `id` with `error`.
        public func respond(to id: JSONRPCID, error: JSONRPCError) {
            agent.emit(.response(JSONRPCResponse(id: id, error: error)))
        }

        /// Sends a notification (a `session/update`, …).
        public func notify(_ method: String, params: JSONValue) {
            agent.emit(.notification(JSONRPCNotification(method: method, params: params)))
        }

        /// Sends a request of the agent's own (`session/request_permission`, `fs/read_text_file`, …).
        public func request(id: JSONRPCID, method: String, params: JSONValue) {
            agent.emit(.request(JSONRPCRequest(id: id, method: method, params: params)))
        }

        /// Writes `line` as a stdio agent writes a line of its output: the bridge gets what ``StdioAgent``'s reader makes
        /// of those bytes (a `session/update` scanned, not parsed, its bytes kept for the relay; anything else parsed;
        /// a line that is not JSON-RPC dropped), so a script can send what no ``JSONValue`` spells (the agent's key
        /// order and escapes, repeated keys, bytes that are not UTF-8).
        public func write(line: [UInt8]) {
            if let update = JSONRPCNotification(scanning: line, method: ACPMethod.sessionUpdate) {
                agent.emit(.notification(update))
                return
            }
            let elements: [JSONRPCFrame.Element]
            switch JSONRPCFrame(parsingUTF8: line) {
            case .single(let element): elements = [element]
            case .batch(let batch): elements = batch
            }
            for case .message(let message) in elements {
                agent.emit(message)
            }
        }

        /// Sends a request of the agent's own and waits for its answer (an error response if the agent ends first).
        ///
        /// The answer is taken as it arrives, not behind the messages the script has still to see.
        public func ask(_ method: String, params: JSONValue) async -> JSONRPCResponse {
            await agent.ask(method, params: params)
        }

        /// Ends the agent as a crashed process would: pending requests fail, `.exited(reason:)` comes last.
        public func exit(reason: String) {
            agent.end(reason)
        }

        /// Stops reading, as a process that closed its stdin: the messages not yet handed to the script are lost
        /// unread, and each request sent from now on fails as a write to a closed pipe does (its error response on
        /// ``ScriptedAgent/events``, the request kept for ``ScriptedAgent/takeUndelivered(_:)`` unless it was resent);
        /// from the first such failure ``ScriptedAgent/endReason`` says the agent stopped reading.
        ///
        /// The agent has not ended: no `.exited` until it is stopped.
        public func stopReading() {
            agent.state.withLock { $0.deaf = true }
        }

        /// Stops writing, as a process that closed its stdout: nothing it sends arrives any more, and
        /// ``ScriptedAgent/endReason`` says so at once.
        ///
        /// The agent has not ended: no `.exited` until it is stopped.
        public func stopWriting() {
            agent.state.withLock { state in
                state.mute = true
                if state.broken == nil { state.broken = "the agent closed its stdout" }
            }
        }
    }

    /// A script: called with each message the bridge sends.
    public typealias Script = @Sendable (_ message: JSONRPCMessage, _ peer: Peer) async -> Void

    fileprivate struct State {
        var reason: String?
        var pending: Set<JSONRPCID> = []
        var asks: [JSONRPCID: CheckedContinuation<JSONRPCResponse, Never>] = [:]
        var nextAsk = 0
        /// It stopped reading (``Peer/stopReading()``).
        var deaf = false
        /// It stopped writing (``Peer/stopWriting()``).
        var mute = false
        /// Why it can take no more although it has not ended.
        var broken: String?
        /// Requests sent in vain to a deaf agent, until taken back.
        var undelivered: [JSONRPCID: JSONRPCRequest] = [:]
        /// Requests sent with ``resend(_:)``: not kept again.
        var resent: Set<JSONRPCID> = []
    }

    /// What the agent says: its messages to the bridge, then how it ended.
    public let events: AsyncStream<ACPAgentEvent>
    private let eventSink: AsyncStream<ACPAgentEvent>.Continuation
    private let inbox: AsyncStream<JSONRPCMessage>
    private let inboxSink: AsyncStream<JSONRPCMessage>.Continuation
    fileprivate let state = Mutex(State())
    private let script: Script
    private let observe: (@Sendable (JSONRPCMessage) -> Void)?

    /// An agent that runs `script` for every message it is sent; `observe` (if given) sees each message as it
    /// arrives, answers to ``Peer/ask(_:params:)`` included, in the order the bridge sent them.
    public init(observe: (@Sendable (JSONRPCMessage) -> Void)? = nil, _ script: @escaping Script) {
        self.script = script
        self.observe = observe
        (events, eventSink) = AsyncStream.makeStream(of: ACPAgentEvent.self)
        (inbox, inboxSink) = AsyncStream.makeStream(of: JSONRPCMessage.self)
    }

    /// Why the agent ended, once it has; or why it can take no more although it has not ended (it stopped writing,
    /// or a request was sent in vain since it stopped reading).
    public var endReason: String? { state.withLock { $0.reason ?? $0.broken } }

    /// Answers the bridge's messages with the script until the agent is stopped or the task cancelled.
    public func run() async {
        let peer = Peer(agent: self)
        await withTaskCancellationHandler {
            for await message in inbox where !state.withLock({ $0.deaf }) {
                await script(message, peer)
            }
        } onCancel: {
            self.end("the agent was stopped")
        }
    }

    /// Hands the bridge's message to the script; once the agent stopped reading, a request fails as a write to a
    /// closed pipe would and is kept to be taken back.
    public func send(_ message: JSONRPCMessage) throws(ACPAgentError) {
        let unread = state.withLock { state -> JSONRPCResponse?? in
            guard state.reason == nil, state.deaf else { return nil }
            // Written to a pipe nobody reads: the write fails, as StdioAgent's does, and the request is kept once.
            guard case .request(let request) = message else { return .some(nil) }
            state.broken = state.broken ?? "the agent stopped reading its input"
            if state.resent.remove(request.id) == nil { state.undelivered[request.id] = request }
            return .some(JSONRPCResponse(id: request.id, error: ACPAgentError.writeFailed("the agent stopped reading").rpcError))
        }
        if let unread {
            if let failure = unread { eventSink.yield(.message(.response(failure))) }
            return
        }
        let (reason, asker) = state.withLock { state -> (String?, CheckedContinuation<JSONRPCResponse, Never>?) in
            if let reason = state.reason { return (reason, nil) }
            switch message {
            case .request(let request): state.pending.insert(request.id)
            case .response(let response): return (nil, state.asks.removeValue(forKey: response.id))
            case .notification: break
            }
            return (nil, nil)
        }
        if let reason { throw ACPAgentError.notRunning(reason) }
        observe?(message)
        if let asker, case .response(let response) = message {
            asker.resume(returning: response)
            return
        }
        inboxSink.yield(message)
    }

    /// Sends a request of the agent's and waits for its answer.
    fileprivate func ask(_ method: String, params: JSONValue) async -> JSONRPCResponse {
        await withCheckedContinuation { continuation in
            let id = state.withLock { state -> JSONRPCID? in
                guard state.reason == nil else { return nil }
                state.nextAsk += 1
                let id = JSONRPCID.string("agent-\(state.nextAsk)")
                state.asks[id] = continuation
                return id
            }
            guard let id else {
                continuation.resume(returning: JSONRPCResponse(id: .null, error: .internalError("the agent has ended")))
                return
            }
            eventSink.yield(.message(.request(JSONRPCRequest(id: id, method: method, params: params))))
        }
    }

    /// Ends the agent: its events stream ends with "the agent was stopped".
    public func stop() async {
        end("the agent was stopped")
    }

    /// Takes back a request sent in vain after the agent stopped reading (``Peer/stopReading()``), once.
    public func takeUndelivered(_ id: JSONRPCID) -> JSONRPCRequest? {
        state.withLock { $0.undelivered.removeValue(forKey: id) }
    }

    /// Sends a request another agent never received; if this agent does not read it either, it is not kept again.
    public func resend(_ request: JSONRPCRequest) throws(ACPAgentError) {
        state.withLock { _ = $0.resent.insert(request.id) }
        do {
            try send(.request(request))
        } catch {
            state.withLock { _ = $0.resent.remove(request.id) }
            throw error
        }
    }

    /// Passes a message of the agent's on (a response settles its request); nothing once the agent has ended or
    /// stopped writing.
    private func emit(_ message: JSONRPCMessage) {
        let open = state.withLock { state -> Bool in
            guard state.reason == nil, !state.mute else { return false }
            if case .response(let response) = message { state.pending.remove(response.id) }
            return true
        }
        if open { eventSink.yield(.message(message)) }
    }

    /// Ends the agent once: unanswered requests get an error, `.exited` comes last, the streams finish.
    private func end(_ reason: String) {
        let ended = state.withLock { state -> ([JSONRPCID], [JSONRPCID: CheckedContinuation<JSONRPCResponse, Never>])? in
            guard state.reason == nil else { return nil }
            state.reason = reason
            defer {
                state.pending.removeAll()
                state.asks.removeAll()
            }
            return (Array(state.pending), state.asks)
        }
        guard let (pending, asks) = ended else { return }
        for (id, asker) in asks {
            asker.resume(returning: JSONRPCResponse(id: id, error: .internalError("the agent ended: \(reason)")))
        }
        for id in pending {
            eventSink.yield(.message(.response(JSONRPCResponse(id: id, error: .internalError("the agent ended: \(reason)")))))
        }
        eventSink.yield(.exited(reason: reason))
        eventSink.finish()
        inboxSink.finish()
    }
}
