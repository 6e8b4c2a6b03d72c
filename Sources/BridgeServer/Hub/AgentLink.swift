import BridgeACP
import BridgeRPC

/// The hub's link to the agent: where the agent is in its life (``AgentState``), the agent most recently launched,
/// its generation (each start counts one more, so what an agent that was replaced sends or is owed is told apart),
/// and the callers waiting for a start to finish.
///
/// A state machine as a value: the hub runs the agent and resumes the waiters it hands back. `HubAgentLinkTests`
/// tests it without an agent process.
struct AgentLink {
    /// A caller of ``BridgeHub/ensureAgent()`` waiting for the agent being started.
    typealias Waiter = CheckedContinuation<Result<AgentHandle, JSONRPCError>, Never>

    /// Where the agent is in its life.
    private(set) var state: AgentState = .idle(lastFailure: nil)
    /// The agent most recently launched (possibly still initializing); `nil` once it ended.
    private(set) var launched: LaunchedAgent?
    /// The generation of the newest agent started; 0 before the first.
    private(set) var generation = 0
    private var waiters: [Waiter] = []

    /// The ready agent, if it is of generation `current`.
    func running(generation current: Int) -> AgentHandle? {
        guard case .running(let handle) = state, handle.generation == current else { return nil }
        return handle
    }

    /// The agent launched as generation `current`, unless it ended or another replaced it.
    func launched(generation current: Int) -> LaunchedAgent? {
        launched?.generation == current ? launched : nil
    }

    /// An agent is being started (or restarted): callers wait (``wait(_:)``) until ``started(_:)``.
    mutating func starting() {
        state = .starting
    }

    /// The generation of the agent about to be launched (one more than the last).
    mutating func nextGeneration() -> Int {
        generation += 1
        return generation
    }

    /// The agent of ``generation`` was launched and is being initialized: requests to it, and answers to its
    /// requests, go to it from now on.
    mutating func launch(_ agent: LaunchedAgent) {
        launched = agent
    }

    /// A caller waits for the start in progress.
    mutating func wait(_ waiter: Waiter) {
        waiters.append(waiter)
    }

    /// The start finished: the agent runs, or the link is idle with the failure.
    ///
    /// Returns the callers that waited, to be resumed with `result`.
    mutating func started(_ result: Result<AgentHandle, JSONRPCError>) -> [Waiter] {
        switch result {
        case .success(let handle): state = .running(handle)
        case .failure(let error): state = .idle(lastFailure: error.message)
        }
        defer { waiters.removeAll() }
        return waiters
    }

    /// The agent of generation `current` ended for `reason`: if it was the running one the link is idle; if it was the
    /// one launched last it is forgotten, and returned.
    ///
    /// An agent replaced already changes nothing.
    mutating func ended(generation current: Int, reason: String) -> LaunchedAgent? {
        if running(generation: current) != nil { state = .idle(lastFailure: reason) }
        guard let dead = launched(generation: current) else { return nil }
        launched = nil
        return dead
    }
}
