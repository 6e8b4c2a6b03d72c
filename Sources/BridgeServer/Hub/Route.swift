import BridgeRPC

/// Where the agent's answer to a forwarded request goes.
enum Route {
    /// Back to a client.
    case client(ClientRoute)
    /// To the bridge itself (its own `initialize`).
    case bridge(CheckedContinuation<JSONRPCResponse, Never>, generation: Int)
    /// The `session/close` the bridge sent for a session it dropped (see ``SessionRetention``): nobody waits for the
    /// answer, it is only logged.
    case retention(session: String, generation: Int)

    /// The agent the request went to.
    var generation: Int {
        switch self {
        case .client(let route): return route.generation
        case .bridge(_, let generation): return generation
        case .retention(_, let generation): return generation
        }
    }

    /// Whether the bridge itself waits for the answer.
    var isBridge: Bool {
        if case .bridge = self { return true }
        return false
    }

    /// Whether it is a `session/close` of a session dropped for retention.
    var isRetention: Bool {
        if case .retention = self { return true }
        return false
    }
}
