public import BridgeRPC

/// Something an agent did, in the order it did it.
public enum ACPAgentEvent: Sendable, Hashable {
    /// A message from the agent: a request for the client, a notification, or a response to a request sent to it.
    case message(JSONRPCMessage)
    /// The agent is gone (process exit, or stopped); always the last event.
    case exited(reason: String)
}

/// An agent that can hand its events over in batches: the messages of one read of its output together, in order, so
/// that their consumer takes one element (and makes one hop) per read instead of one per message.
public protocol ACPEventBatching: ACPAgent {
    /// Takes the agent's events in batches, in the order and with the guarantees of ``ACPAgent/events`` (a batch is
    /// never empty; `.exited` comes last, in the last batch), instead of one by one: ``ACPAgent/events`` then
    /// finishes without an element. Call it before ``ACPAgent/run()``; `nil` once that has started, or when the
    /// batches were taken already (the events then go where they went).
    func takeEventBatches() -> AsyncStream<[ACPAgentEvent]>?
}
