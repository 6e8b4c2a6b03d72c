public import BridgeProcess
public import BridgeRPC

/// Why talking to an agent failed.
public enum ACPAgentError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The agent could not be started (command not found, not executable, bad working directory...).
    case launchFailed(String)
    /// The agent's process could not be started: the program, the step that failed and the system's `errno`.
    case spawnFailed(ChildProcessError)
    /// The agent is not running (it exited, or was never started); the reason says why.
    case notRunning(String)
    /// Writing to the agent failed.
    case writeFailed(String)

    /// What happened, for people.
    public var description: String {
        switch self {
        case .launchFailed(let reason): return "the agent could not be started: \(reason)"
        case .spawnFailed(let error): return "the agent could not be started: \(error)"
        case .notRunning(let reason): return "the agent is not running: \(reason)"
        case .writeFailed(let reason): return "could not write to the agent: \(reason)"
        }
    }

    /// The JSON-RPC error a client should get for this failure (-32603 with the reason).
    public var rpcError: JSONRPCError {
        JSONRPCError.internalError(description)
    }
}
