import BridgeRPC
import Synchronization

/// The ids of requests sent to an agent and not answered yet, so that they can be failed when the agent dies.
final class OutstandingRequests: Sendable {
    private let ids = Mutex<Set<JSONRPCID>>([])

    /// Notes what `message` does to the set when it is sent to the agent.
    func sent(_ message: JSONRPCMessage) {
        if case .request(let request) = message {
            ids.withLock { _ = $0.insert(request.id) }
        }
    }

    /// Notes what `message` does to the set when it comes from the agent.
    func received(_ message: JSONRPCMessage) {
        if case .response(let response) = message {
            ids.withLock { _ = $0.remove(response.id) }
        }
    }

    /// Forgets a request whose sending failed; returns whether it was still waiting (nobody failed it yet).
    @discardableResult
    func forget(_ id: JSONRPCID) -> Bool {
        ids.withLock { $0.remove(id) != nil }
    }

    /// Empties the set, returning an error response for each request, saying `reason`.
    func failAll(reason: String) -> [JSONRPCMessage] {
        let pending = ids.withLock { ids in
            defer { ids.removeAll() }
            return ids
        }
        return pending.map { id in
            .response(JSONRPCResponse(id: id, error: JSONRPCError.internalError(reason, data: ["reason": .string(reason)])))
        }
    }
}
