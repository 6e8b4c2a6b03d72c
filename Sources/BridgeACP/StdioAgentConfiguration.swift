/// How to start an ACP agent process that speaks NDJSON JSON-RPC on stdin/stdout.
public struct StdioAgentConfiguration: Sendable, Hashable {
    /// The command and its arguments, for example `["gemini", "--acp"]`.
    ///
    /// A command without `/` is looked up on `PATH`.
    public var command: [String]
    /// Variables added to (or replacing those in) the bridge's own environment.
    public var environment: [String: String]
    /// The process's working directory; `nil` keeps the bridge's.
    public var workingDirectory: String?
    /// How long to wait after SIGTERM before SIGKILL when stopping the agent.
    public var terminationGrace: Duration
    /// The longest line (in bytes, without its line break) read from the agent; longer ones are dropped and logged.
    public var maxLineLength: Int

    /// Creates a configuration.
    public init(
        command: [String], environment: [String: String] = [:], workingDirectory: String? = nil,
        terminationGrace: Duration = .seconds(3), maxLineLength: Int = StdioAgent.maxLineLength
    ) {
        self.command = command
        self.environment = environment
        self.workingDirectory = workingDirectory
        self.terminationGrace = terminationGrace
        self.maxLineLength = maxLineLength
    }
}
