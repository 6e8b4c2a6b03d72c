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
    }

    public let events: AsyncStream<ACPAgentEvent>
    private let eventSink: AsyncStream<ACPAgentEvent>.Continuation
    private let inbox: AsyncStream<JSONRPCMessage>
    private let inboxSink: AsyncStream<JSONRPCMessage>.Continuation
    private let state = Mutex(State())
    private let script: Script

    /// An agent that runs `script` for every message it is sent.
    public init(_ script: @escaping Script) {
        self.script = script
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
        let reason = state.withLock { state -> String? in
            if let reason = state.reason { return reason }
            if case .request(let request) = message { state.pending.insert(request.id) }
            return nil
        }
        if let reason { throw ACPAgentError.notRunning(reason) }
        inboxSink.yield(message)
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
        let pending = state.withLock { state -> [JSONRPCID]? in
            guard state.reason == nil else { return nil }
            state.reason = reason
            defer { state.pending.removeAll() }
            return Array(state.pending)
        }
        guard let pending else { return }
        for id in pending {
            eventSink.yield(.message(.response(JSONRPCResponse(id: id, error: .internalError("the agent ended: \(reason)")))))
        }
        eventSink.yield(.exited(reason: reason))
        eventSink.finish()
        inboxSink.finish()
    }
}
