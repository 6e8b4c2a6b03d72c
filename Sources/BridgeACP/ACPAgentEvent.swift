import BridgeRPC

/// Something an agent did, in the order it did it.
public enum ACPAgentEvent: Sendable, Hashable {
    /// A message from the agent: a request for the client, a notification, or a response to a request sent to it.
    case message(JSONRPCMessage)
    /// The agent is gone (process exit, or stopped); always the last event.
    case exited(reason: String)
}
