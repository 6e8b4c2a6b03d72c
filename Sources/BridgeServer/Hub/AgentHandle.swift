import BridgeACP
import BridgeRPC

/// The running agent and what it said to the bridge's `initialize`.
struct AgentHandle: Sendable {
    let agent: any ACPAgent
    let generation: Int
    /// The agent's `initialize` result (official ACP).
    let initializeResult: JSONValue
}
