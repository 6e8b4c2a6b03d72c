public import BridgeProcess

/// What a ``StdioAgentLauncher`` starts: the agent's program (resolved to a path), its arguments, environment and
/// working directory, and the child's ends of its three pipes.
public struct StdioAgentLaunchRequest: Sendable {
    /// The program's path (found on `PATH` already).
    public var executable: String
    /// Its arguments, without the program's name.
    public var arguments: [String]
    /// Its whole environment.
    public var environment: [String: String]
    /// The directory it starts in; `nil`: the bridge's own.
    public var workingDirectory: String?
    /// The read end of its stdin pipe (the launcher passes it on; the caller closes its copy after the launch).
    public var stdin: Int32
    /// The write end of its stdout pipe.
    public var stdout: Int32
    /// The write end of its stderr pipe.
    public var stderr: Int32

    /// A request of its parts.
    public init(
        executable: String, arguments: [String], environment: [String: String], workingDirectory: String?, stdin: Int32,
        stdout: Int32, stderr: Int32
    ) {
        self.executable = executable
        self.arguments = arguments
        self.environment = environment
        self.workingDirectory = workingDirectory
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
    }
}

/// Starts an agent's process: the seam through which the bridge runs the agent in a sandbox of its own (BridgeServer
/// fills it with a supervised, Landlock-confined `ChildProcess`; BridgeACP knows nothing of sandboxes).
///
/// The default is ``StdioAgentProcessLauncher`` (a direct, unconfined `ChildProcess`).
public protocol StdioAgentLauncher: Sendable {
    /// Starts `request`, or throws ``ACPAgentError/spawnFailed(_:)`` (the program, the step and the `errno`) or
    /// ``ACPAgentError/launchFailed(_:)`` saying why it could not.
    func launch(_ request: StdioAgentLaunchRequest) throws(ACPAgentError) -> ChildProcess
}
