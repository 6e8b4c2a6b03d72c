/// Where a session the bridge knows stands with the running agent.
enum SessionState: Equatable {
    /// The running agent has it: prompts go to it.
    case live
    /// Kept from before a restart (of the bridge or the agent): the next client that attaches restores it, through the
    /// agent's `session/load` or `session/resume` when it can, read-only otherwise. The agent's updates for it are
    /// dropped meanwhile (a load's history replay: the bridge has its own).
    case dormant
    /// Restored without the agent (it cannot load it): its stored updates are replayed, prompts are refused
    /// (``BridgeErrors/readOnly(_:)``).
    case readOnly
}
