import BridgeRPC

/// Answers collected for a batch until all are in.
struct BatchRecord {
    /// The connection the batch came from.
    let connection: ConnectionID
    /// How many answers are still to come.
    var remaining: Int
    /// The answers so far, in the order they came.
    var responses: [JSONRPCMessage] = []
}
