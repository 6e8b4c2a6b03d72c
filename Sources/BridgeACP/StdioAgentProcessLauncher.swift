public import BridgeProcess

/// Starts an agent as a direct, unconfined `ChildProcess` in the bridge's process group (an agent started so may
/// outlive a bridge killed with SIGKILL; `oa-bridge serve` uses its own launcher, which ties the agent to the bridge).
public struct StdioAgentProcessLauncher: StdioAgentLauncher {
    /// The launcher.
    public init() {}

    /// Starts the agent as a direct child (BridgeProcess's spawn) with the request's program, arguments, environment,
    /// directory and standard input; a failed spawn is ``ACPAgentError/spawnFailed(_:)``, with its errno.
    public func launch(_ request: StdioAgentLaunchRequest) throws(ACPAgentError) -> ChildProcess {
        do {
            return try ChildProcess.spawn(ChildProcess.Request(
                executable: request.executable, arguments: request.arguments, environment: request.environment,
                directory: request.workingDirectory.map { .path($0) } ?? .inherited, input: request.stdin,
                output: request.stdout, error: request.stderr, supervised: false))
        } catch {
            throw .spawnFailed(error)
        }
    }
}
