public import BridgeACP
public import BridgeRPC
import Synchronization

/// An ACP agent in the test's own process, scripted by a closure (``BridgeServerConfiguration/inProcessAgent``): no
/// process, no pipes and no interpreter to start, so its timing is the test's, not a loaded machine's. Every message
/// the bridge sends is handed to the script with a ``Peer`` to answer through, one after the other in the order they
/// were sent, as a process reads its input: a script that holds an answer back (a slow `initialize`) holds the
/// messages behind it too.
///
/// Like a process: a request still unanswered when the agent ends gets an error response, then `.exited` comes last.
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
        /// The answer is taken as it arrives, not behind the messages the script has still to see.
        public func ask(_ method: String, params: JSONValue) async -> JSONRPCResponse {
            await agent.ask(method, params: params)
        }

        /// Ends the agent as a crashed process would: pending requests fail, `.exited(reason:)` comes last.
        public func exit(reason: String) {
            agent.end(reason)
        }
    }

    /// A script: called with each message the bridge sends.
    public typealias Script = @Sendable (_ message: JSONRPCMessage, _ peer: Peer) async -> Void

    private struct State {
        var reason: String?
        var pending: Set<JSONRPCID> = []
        var asks: [JSONRPCID: CheckedContinuation<JSONRPCResponse, Never>] = [:]
        var nextAsk = 0
    }

    public let events: AsyncStream<ACPAgentEvent>
    private let eventSink: AsyncStream<ACPAgentEvent>.Continuation
    private let inbox: AsyncStream<JSONRPCMessage>
    private let inboxSink: AsyncStream<JSONRPCMessage>.Continuation
    private let state = Mutex(State())
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

    /// Why the agent ended, once it has.
    public var endReason: String? { state.withLock { $0.reason } }

    public func run() async {
        let peer = Peer(agent: self)
        await withTaskCancellationHandler {
            for await message in inbox {
                await script(message, peer)
            }
        } onCancel: {
            self.end("the agent was stopped")
        }
    }

    public func send(_ message: JSONRPCMessage) throws(ACPAgentError) {
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

    public func stop() async {
        end("the agent was stopped")
    }

    /// Passes a message of the agent's on (a response settles its request); nothing once the agent has ended.
    private func emit(_ message: JSONRPCMessage) {
        let open = state.withLock { state -> Bool in
            guard state.reason == nil else { return false }
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
