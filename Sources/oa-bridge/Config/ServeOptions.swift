public import ArgumentParser
import BridgeConfig
import BridgePairing
import BridgeServer
import BridgeTerminal
import BridgeWorkspace
import Logging

/// The options of `oa-bridge serve`.
///
/// Each is optional here: a value not given on the command line comes from `OA_BRIDGE_<NAME>`, then the
/// config file, then the default (`ServeSettings` in BridgeConfig).
struct ServeOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Config file (YAML).", valueName: "path"))
    var config: String?

    @Option(help: "The name phones see (the DNS-SD instance name). Default: this host's name.")
    var name: String?

    @Option(help: "The address to listen on: :: for IPv6 and IPv4, 0.0.0.0 for IPv4 only, 127.0.0.1 for this machine only. Default: :: (0.0.0.0 where IPv6 is off).")
    var host: String?

    @Option(help: "The TCP port to listen on. Default: 9099.")
    var port: Int?

    @Option(help: "The ACP agent command to run behind the bridge, e.g. 'gemini --acp'. Default: the built-in demo agent.")
    var agent: String?

    @Option(help: "The agent process's working directory. Default: --working-directory.")
    var agentCwd: String?

    @Option(help: "The directory sessions work in (fs/* requests are confined to it). Default: the current directory.")
    var workingDirectory: String?

    @Option(help: "How far the agent's fs/read_text_file and fs/write_text_file reach: workspace (the session's directory and its additionalDirectories), home (also anything under your home directory) or any (any absolute path); never through a symbolic link beyond it. Default: workspace.")
    var fsScope: WorkspaceScope?

    @Option(name: [.customLong("discovery"), .customLong("backend")], help: "mDNS advertising: avahi, dnssd, or off (--backend is the same option). Default: avahi on Linux.")
    var discovery: DiscoveryChoice?

    @Option(help: ArgumentHelp("Announce on this network interface only (e.g. eth0), not on docker0, VPN or virtual bridges. Default: every interface avahi-daemon uses.", valueName: "name"))
    var interface: String?

    @Option(help: "Where state is kept (install id, pairing database). Default: $XDG_STATE_HOME/oa-bridge or ~/.local/state/oa-bridge.")
    var stateDir: String?

    @Option(help: "Largest accepted WebSocket message, in bytes. Default: 16777216 (16 MiB).")
    var maxFrameSize: Int?

    @Option(help: "Most WebSocket connections at once; beyond it upgrades get 503 with a JSON reason. Default: 1024.")
    var maxConnections: Int?

    @Option(help: "Most connections from one address still waiting for their first answer; beyond it new ones get 503. Default: 128.")
    var maxPendingPerAddress: Int?

    @Option(help: "Most idle sessions kept for phones to resume (no phone attached, no prompt running); past it the longest idle is dropped and closed in the agent. Default: 64.")
    var maxIdleSessions: Int?

    @Option(help: "Most bytes of updates the idle sessions keep together for resume; past it the longest idle are dropped. Default: 67108864 (64 MiB).")
    var maxIdleReplayBytes: Int?

    @Option(help: ArgumentHelp("How long an idle session is kept: seconds, or 30m, 24h, 7d; 0 or off for no limit. Default: 24h.", valueName: "duration"),
            transform: { text in
                guard let seconds = RetentionDuration.seconds(text) else { throw ValidationError("--idle-session-timeout: expected seconds, or a number with s, m, h or d (24h); 0 or off for no limit; got \(text)") }
                return seconds
            })
    var idleSessionTimeout: Int?

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical. Default: info.")
    var logLevel: Logger.Level?

    @Option(help: "Log format: text or json (one JSON object per line, for journald or log shippers). Default: text.")
    var logFormat: BridgeLogging.Format?

    @Option(help: "Authentication: token (phones pair with the QR code) or none (loopback and --allow-network only). Default: token.")
    var auth: AuthMode?

    @Flag(inversion: .prefixedNo, help: "Hold each new pairing until it is approved on the desktop ('oa-bridge devices approve ID'). Default: off.")
    var requireApproval: Bool?

    @Option(help: "Device-bound tokens (DPoP, RFC 9449): required (every device proves its key; devices paired before must pair again), optional (new pairings are bound, older devices keep working until they pair again) or off. Default: optional.")
    var dpop: DPoPMode?

    @Option(help: "With --auth none: also accept clients from this network (CIDR, e.g. 192.168.1.0/24). Repeatable; comma-separated in the environment and config.")
    var allowNetwork: [String] = []

    @Flag(inversion: .prefixedNo, help: "Also accept pairing, tokens and WebSocket connections in clear (ws://, http://) from other machines, for clients that cannot do TLS yet. Anyone on the network can then read tokens and prompts. Default: off (TLS required from other machines; loopback is always allowed).")
    var allowPlaintext: Bool?

    @Flag(inversion: .prefixedNo, help: "Serve the agent's terminal/* requests on the desktop: commands run in the session's directory, their output is shown to the phones. --no-terminal refuses them and tells the agent terminal: false. Default: on.")
    var terminal: Bool?

    @Option(help: "How the agent's terminals are confined: landlock (the default: to the session's directories and --fs-scope, never the bridge's own files; refused where the kernel has no Landlock) or unconfined.")
    var terminalConfinement: TerminalConfinement?

    @Flag(inversion: .prefixedNo, help: "Run the agent process itself under Landlock, as terminals are: it writes only in the session's directories, --fs-scope and a temporary directory of its own, reads those, the system's directories and its own installation, never the bridge's files or the rest of the home directory. Not for agents that keep logins or state in the home directory. Default: off.")
    var sandboxAgent: Bool?

    @Option(help: "With --sandbox-agent: a directory the agent may also write (and read), for the state it keeps outside the session: its logins, history, cache (e.g. ~/.fast-agent). Repeatable; comma-separated in the environment and config. The bridge's own files stay out of reach.")
    var sandboxAgentWrite: [String] = []

    @Flag(help: "Decline permessage-deflate (RFC 7692) on WebSocket upgrades: every message goes uncompressed. Default: compression negotiated with clients that offer it (browsers do), which sends streamed answers in a fraction of the bytes.")
    var noCompression: Bool = false

    /// What was given on the command line, for ``ServeSettings/resolve(_:environment:)``.
    var flags: ServeFlags {
        var flags = ServeFlags()
        flags.config = config
        flags.name = name
        flags.host = host
        flags.port = port
        flags.agent = agent
        flags.agentCwd = agentCwd
        flags.workingDirectory = workingDirectory
        flags.fsScope = fsScope
        flags.discovery = discovery
        flags.interface = interface
        flags.stateDir = stateDir
        flags.maxFrameSize = maxFrameSize
        flags.maxConnections = maxConnections
        flags.maxPendingPerAddress = maxPendingPerAddress
        flags.maxIdleSessions = maxIdleSessions
        flags.maxIdleReplayBytes = maxIdleReplayBytes
        flags.idleSessionTimeout = idleSessionTimeout
        flags.logLevel = logLevel
        flags.logFormat = logFormat
        flags.auth = auth
        flags.dpop = dpop
        flags.requireApproval = requireApproval
        flags.allowNetwork = allowNetwork
        flags.allowPlaintext = allowPlaintext
        flags.terminal = terminal
        flags.terminalConfinement = terminalConfinement
        flags.sandboxAgent = sandboxAgent
        flags.sandboxAgentWrite = sandboxAgentWrite
        flags.noCompression = noCompression ? true : nil
        return flags
    }
}

extension AuthMode: ExpressibleByArgument {}
extension DPoPMode: ExpressibleByArgument {}
extension TerminalConfinement: ExpressibleByArgument {}
extension DiscoveryChoice: ExpressibleByArgument {}
extension BridgeLogging.Format: ExpressibleByArgument {}

/// The name the commands bootstrap logging by.
typealias LoggingSetup = BridgeLogging
