import BridgeRPC

/// An agent->client request sent to the clients attached to a session; the first answer wins (see ``AskTable``).
struct PendingAsk {
    /// The id the agent used.
    let agentRequestID: JSONRPCID
    let method: String
    let sessionID: String
    /// The request's params (official spelling), to ask again on resume.
    var params: JSONValue? = nil
    /// The clients asked that have not gone away (empty while the session waits for a client to resume).
    var targets: Set<ConnectionID>
    let generation: Int
    /// Since when nobody who could answer is connected; `nil` while someone is.
    var orphanedSince: ContinuousClock.Instant? = nil
    /// When the bridge received it (on the configuration's clock), for the answer deadline.
    var askedAt: ContinuousClock.Instant
    /// Clients that answered with an error (the first success of another still wins).
    var failed: Set<ConnectionID> = []
    /// The error of the last client that failed, official spelling: what the agent gets when nobody succeeds.
    var lastError: JSONRPCError? = nil
}
