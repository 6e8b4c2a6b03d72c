public import BridgeRPC

/// An ACP agent the bridge talks to in official ACP (camelCase) JSON-RPC.
///
/// The owner runs ``run()`` in a task it owns, consumes ``events`` in another, and ``send(_:)``s messages.
/// Responses, agent->client requests and notifications all arrive on ``events`` in the order the agent sent them,
/// so a `session/prompt` response never overtakes the `session/update`s sent before it.
/// When the agent ends, every request sent to it and not yet answered gets an error response on ``events``
/// that says so, then ``ACPAgentEvent/exited(reason:)`` comes last and the stream finishes.
public protocol ACPAgent: Sendable {
    /// What the agent sends, in order; finishes after `.exited`.
    var events: AsyncStream<ACPAgentEvent> { get }

    /// Runs the agent until it exits or the calling task is cancelled (which stops it). Returns when it is gone.
    func run() async

    /// Queues one message (a request, notification or response) for the agent, behind every message queued
    /// before, without waiting: the caller's state changes around it stay atomic. Throws when the agent is not
    /// running; a delivery that fails later answers the request (if it is one) with an error response on ``events``.
    func send(_ message: JSONRPCMessage) throws(ACPAgentError)

    /// Asks the agent to end (a process gets SIGTERM, then SIGKILL); ``run()`` returns once it is gone.
    func stop() async

    /// Why the agent can take no more requests although its end may not be on ``events`` yet (a process whose pipes
    /// closed before its exit is reported), or nil while it can.
    var endReason: String? { get }

    /// Takes back the request with `id` if it never reached the agent (its write failed; the error response is on
    /// ``events``), so its owner may send it to another agent; nil for any other request.
    func takeUndelivered(_ id: JSONRPCID) -> JSONRPCRequest?

    /// Sends a request another agent never received (``takeUndelivered(_:)``), like ``send(_:)``; if it fails to
    /// reach this agent too it is not kept again.
    func resend(_ request: JSONRPCRequest) throws(ACPAgentError)
}

extension ACPAgent {
    /// An agent whose end is known only from ``events``.
    public var endReason: String? { nil }

    /// An agent that keeps no undelivered requests.
    public func takeUndelivered(_ id: JSONRPCID) -> JSONRPCRequest? { nil }

    /// Sends the request as any other.
    public func resend(_ request: JSONRPCRequest) throws(ACPAgentError) {
        try send(.request(request))
    }
}
