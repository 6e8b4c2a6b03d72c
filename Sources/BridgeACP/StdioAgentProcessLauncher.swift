public import BridgeProcess

/// Starts an agent as a direct, unconfined ``ChildProcess`` in the bridge's process group (an agent started so may
/// outlive a bridge killed with SIGKILL; `oa-bridge serve` uses its own launcher, which ties the agent to the bridge).
public struct StdioAgentProcessLauncher: StdioAgentLauncher {
    /// The launcher.
    public init() {}

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
