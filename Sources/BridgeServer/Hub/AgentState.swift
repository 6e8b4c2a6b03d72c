/// Where the agent is in its life.
enum AgentState {
    /// Not running; the last failure, if any.
    case idle(lastFailure: String?)
    /// Being started and initialized.
    case starting
    /// Ready.
    case running(AgentHandle)
}
