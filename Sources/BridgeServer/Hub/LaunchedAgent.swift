import BridgeACP

/// An agent to run and watch, handed to the hub's run loop.
struct LaunchedAgent: Sendable {
    let agent: any ACPAgent
    let generation: Int
}
