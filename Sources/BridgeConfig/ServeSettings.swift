import BridgeHTTP
public import BridgePairing
import BridgeServer
public import BridgeTerminal
public import BridgeWorkspace
public import Foundation
public import Logging

/// A setting's value and where it came from (`--port`, `OA_BRIDGE_PORT`, the config file's path, or `default`).
public struct Resolved<Value: Sendable>: Sendable {
    /// The value in effect.
    public var value: Value
    /// Where it came from, as `oa-bridge config show` prints it.
    public var source: String

    /// A value and its source.
    public init(value: Value, source: String) {
        self.value = value
        self.source = source
    }
}

/// The values given on the command line of `serve` (or `config show`); `nil` (or empty) where not given.
///
/// The command line parses into this; ``ServeSettings/resolve(_:environment:)`` fills in the rest.
public struct ServeFlags: Sendable {
    /// `--config`: the config file to read instead of the default location.
    public var config: String?
    /// `--name`.
    public var name: String?
    /// `--host`.
    public var host: String?
    /// `--port`.
    public var port: Int?
    /// `--agent`.
    public var agent: String?
    /// `--agent-cwd`.
    public var agentCwd: String?
    /// `--working-directory`.
    public var workingDirectory: String?
    /// `--fs-scope`.
    public var fsScope: WorkspaceScope?
    /// `--discovery` / `--backend`.
    public var discovery: DiscoveryChoice?
    /// `--interface`.
    public var interface: String?
    /// `--state-dir`.
    public var stateDir: String?
    /// `--max-frame-size`.
    public var maxFrameSize: Int?
    /// `--max-connections`.
    public var maxConnections: Int?
    /// `--max-pending-per-address`.
    public var maxPendingPerAddress: Int?
    /// `--max-idle-sessions`.
    public var maxIdleSessions: Int?
    /// `--max-idle-replay-bytes`.
    public var maxIdleReplayBytes: Int?
    /// `--idle-session-timeout`, in seconds (0: no limit).
    public var idleSessionTimeout: Int?
    /// `--log-level`.
    public var logLevel: Logger.Level?
    /// `--log-format`.
    public var logFormat: BridgeLogging.Format?
    /// `--auth`.
    public var auth: AuthMode?
    /// `--dpop`.
    public var dpop: DPoPMode?
    /// `--require-approval` / `--no-require-approval`.
    public var requireApproval: Bool?
    /// `--allow-network` (repeatable); empty when not given.
    public var allowNetwork: [String] = []
    /// `--allow-plaintext` / `--no-allow-plaintext`.
    public var allowPlaintext: Bool?
    /// `--terminal` / `--no-terminal`.
    public var terminal: Bool?
    /// `--terminal-confinement`.
    public var terminalConfinement: TerminalConfinement?
    /// `--sandbox-agent` / `--no-sandbox-agent`.
    public var sandboxAgent: Bool?
    /// `--sandbox-agent-write` (repeatable); empty when not given.
    public var sandboxAgentWrite: [String] = []
    /// `--no-compression`: decline permessage-deflate.
    public var noCompression: Bool?

    /// Nothing given on the command line.
    public init() {}
}

/// The effective settings of `oa-bridge serve`: the command line, then `OA_BRIDGE_*` environment variables, then the
/// config file, then defaults; each with its source.
public struct ServeSettings: Sendable {
    /// The name phones see (the DNS-SD instance name).
    public var name: Resolved<String>
    /// The address to listen on.
    public var host: Resolved<String>
    /// The TCP port.
    public var port: Resolved<Int>
    /// The agent command line; `nil` for the built-in demo agent.
    public var agent: Resolved<String?>
    /// Extra environment for the agent (config file only).
    public var agentEnv: Resolved<[String: String]>
    /// The agent's working directory; `nil` for ``workingDirectory``.
    public var agentCwd: Resolved<String?>
    /// The directory sessions work in.
    public var workingDirectory: Resolved<String>
    /// How far the agent's file requests reach.
    public var fsScope: Resolved<WorkspaceScope>
    /// mDNS advertising.
    public var discovery: Resolved<DiscoveryChoice>
    /// The interface to announce on; `nil` for every interface the daemon uses.
    public var interface: Resolved<String?>
    /// The state directory; `nil` for the XDG default.
    public var stateDir: Resolved<String?>
    /// Largest accepted WebSocket message, in bytes.
    public var maxFrameSize: Resolved<Int>
    /// Most WebSocket connections at once.
    public var maxConnections: Resolved<Int>
    /// Most unanswered connections from one address.
    public var maxPendingPerAddress: Resolved<Int>
    /// Most idle sessions kept (no phone attached, no prompt running).
    public var maxIdleSessions: Resolved<Int>
    /// Most bytes of replay the idle sessions keep together.
    public var maxIdleReplayBytes: Resolved<Int>
    /// Seconds an idle session is kept; 0 keeps it without a time limit.
    public var idleSessionTimeout: Resolved<Int>
    /// The log level.
    public var logLevel: Resolved<Logger.Level>
    /// The log line format.
    public var logFormat: Resolved<BridgeLogging.Format>
    /// Whether phones need a token.
    public var auth: Resolved<AuthMode>
    /// Whether tokens are bound to the device's key (DPoP, RFC 9449).
    public var dpop: Resolved<DPoPMode>
    /// Whether new pairings wait for approval on the desktop.
    public var requireApproval: Resolved<Bool>
    /// Networks accepted without a token under `--auth none`.
    public var allowNetwork: Resolved<[String]>
    /// Whether other machines may use ws:// and http:// in clear.
    public var allowPlaintext: Resolved<Bool>
    /// Whether the agent's `terminal/*` requests are served on the desktop.
    public var terminal: Resolved<Bool>
    /// How terminals are confined: Landlock (refused where the kernel has none) or unconfined.
    public var terminalConfinement: Resolved<TerminalConfinement>
    /// Whether the agent process runs under Landlock, as terminals do.
    public var sandboxAgent: Resolved<Bool>
    /// Directories a sandboxed agent may also write (its own state: logins, history).
    public var sandboxAgentWrite: Resolved<[String]>
    /// Whether WebSocket upgrades decline permessage-deflate (key `no-compression`).
    public var noCompression: Resolved<Bool>
    /// The config file consulted.
    public var configPath: String
    /// Whether that file exists.
    public var configExists: Bool

    /// Every key a config file may hold (the long option names).
    public static let knownKeys: Set<String> = [
        "name", "host", "port", "agent", "agent-env", "agent-cwd", "working-directory", "fs-scope", "discovery", "state-dir",
        "max-frame-size", "max-connections", "max-pending-per-address", "max-idle-sessions", "max-idle-replay-bytes", "idle-session-timeout", "log-level", "log-format", "auth", "dpop", "require-approval", "allow-network",
        "allow-plaintext", "interface", "terminal", "terminal-confinement",
        "sandbox-agent", "sandbox-agent-write", "no-compression",
    ]

    /// The environment variable for a key: `max-frame-size` → `OA_BRIDGE_MAX_FRAME_SIZE`.
    public static func environmentName(_ key: String) -> String {
        "OA_BRIDGE_" + key.uppercased().replacingOccurrences(of: "-", with: "_")
    }

    /// Merges `flags`, the environment, the config file (`flags.config`, `OA_BRIDGE_CONFIG` or the default location)
    /// and the defaults.
    ///
    /// Throws when the file cannot be used or a value does not parse.
    public static func resolve(
        _ flags: ServeFlags, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigError) -> ServeSettings {
        let file = try ConfigFile.load(explicit: flags.config, environment: environment)
        let resolver = SettingResolver(environment: environment, file: file)
        let agentEnv: Resolved<[String: String]>
        if case .map(let map)? = file.values["agent-env"] {
            agentEnv = Resolved(value: map, source: file.path)
        } else if file.values["agent-env"] != nil {
            throw .badValue(key: "agent-env", value: "…", source: file.path, expected: "a mapping of NAME: value")
        } else {
            agentEnv = Resolved(value: [:], source: "default")
        }
        return ServeSettings(
            name: try resolver.pick("name", flags.name, parse: { $0.isEmpty || $0.utf8.count > 63 ? nil : $0 }, expected: "1 to 63 bytes", default: HostName.current),
            host: try resolver.pick("host", flags.host, parse: { $0.isEmpty ? nil : $0 }, expected: "an address", default: BridgeServerConfiguration.dualStackHost),
            port: try resolver.pick("port", flags.port, parse: { Int($0).flatMap { (0...65_535).contains($0) ? $0 : nil } }, expected: "a port from 0 to 65535", default: 9099),
            agent: try resolver.pickOptional("agent", flags.agent, parse: { $0 }, expected: "a command line"),
            agentEnv: agentEnv,
            agentCwd: try resolver.pickOptional("agent-cwd", flags.agentCwd, parse: { $0 }, expected: "a directory"),
            workingDirectory: try resolver.pick(
                "working-directory", flags.workingDirectory, parse: { $0 },
                expected: "a directory", default: FileManager.default.currentDirectoryPath),
            fsScope: try resolver.pick("fs-scope", flags.fsScope, parse: WorkspaceScope.init(rawValue:), expected: "workspace, home or any", default: .workspace),
            discovery: try resolver.pick("discovery", flags.discovery, parse: DiscoveryChoice.init(rawValue:), expected: "avahi, dnssd or off", default: .platformDefault),
            interface: try resolver.pickOptional("interface", flags.interface, parse: { $0.isEmpty ? nil : $0 }, expected: "a network interface name, e.g. eth0"),
            stateDir: try resolver.pickOptional("state-dir", flags.stateDir, parse: { $0 }, expected: "a directory"),
            maxFrameSize: try resolver.pick(
                "max-frame-size", flags.maxFrameSize, parse: { Int($0).flatMap { $0 >= 1_024 ? $0 : nil } },
                expected: "a number of bytes, at least 1024", default: BridgeServerConfiguration.defaultMaxFrameSize),
            maxConnections: try resolver.pick(
                "max-connections", flags.maxConnections, parse: { Int($0).flatMap { $0 >= 1 ? $0 : nil } },
                expected: "a number of connections, at least 1", default: 1_024),
            maxPendingPerAddress: try resolver.pick(
                "max-pending-per-address", flags.maxPendingPerAddress, parse: { Int($0).flatMap { $0 >= 1 ? $0 : nil } },
                expected: "a number of connections, at least 1", default: 128),
            maxIdleSessions: try resolver.pick(
                "max-idle-sessions", flags.maxIdleSessions, parse: { Int($0).flatMap { $0 >= 0 ? $0 : nil } },
                expected: "a number of sessions, 0 or more", default: SessionRetention.defaultMaxIdleSessions),
            maxIdleReplayBytes: try resolver.pick(
                "max-idle-replay-bytes", flags.maxIdleReplayBytes, parse: { Int($0).flatMap { $0 >= 0 ? $0 : nil } },
                expected: "a number of bytes, 0 or more", default: SessionRetention.defaultMaxIdleReplayBytes),
            idleSessionTimeout: try resolver.pick(
                "idle-session-timeout", flags.idleSessionTimeout, parse: RetentionDuration.seconds,
                expected: "seconds, or a number with s, m, h or d (24h); 0 or off for no limit", default: Int(SessionRetention.defaultIdleTimeout.components.seconds)),
            logLevel: try resolver.pick("log-level", flags.logLevel, parse: Logger.Level.init(rawValue:), expected: "trace, debug, info, notice, warning, error or critical", default: .info),
            logFormat: try resolver.pick("log-format", flags.logFormat, parse: BridgeLogging.Format.init(rawValue:), expected: "text or json", default: .text),
            auth: try resolver.pick("auth", flags.auth, parse: AuthMode.init(rawValue:), expected: "token or none", default: .token),
            dpop: try resolver.pick("dpop", flags.dpop, parse: DPoPMode.init(rawValue:), expected: "required, optional or off", default: .optional),
            requireApproval: try resolver.pick("require-approval", flags.requireApproval, parse: SettingResolver.bool, expected: "true or false", default: false),
            allowNetwork: try resolver.pick("allow-network", flags.allowNetwork.isEmpty ? nil : flags.allowNetwork,
                                            parse: { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } },
                                            expected: "CIDR networks, comma-separated", default: []),
            allowPlaintext: try resolver.pick("allow-plaintext", flags.allowPlaintext, parse: SettingResolver.bool, expected: "true or false", default: false),
            terminal: try resolver.pick("terminal", flags.terminal, parse: SettingResolver.bool, expected: "true or false", default: true),
            terminalConfinement: try resolver.pick(
                "terminal-confinement", flags.terminalConfinement, parse: TerminalConfinement.init(rawValue:),
                expected: "landlock or unconfined", default: .landlock),
            sandboxAgent: try resolver.pick("sandbox-agent", flags.sandboxAgent, parse: SettingResolver.bool, expected: "true or false", default: false),
            sandboxAgentWrite: try resolver.pick("sandbox-agent-write", flags.sandboxAgentWrite.isEmpty ? nil : flags.sandboxAgentWrite,
                                                 parse: { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } },
                                                 expected: "directories, comma-separated", default: []),
            noCompression: try resolver.pick("no-compression", flags.noCompression, parse: SettingResolver.bool, expected: "true or false", default: false),
            configPath: file.path,
            configExists: file.exists)
    }

    /// `(key, value, source)` rows for `config show`, in the order of the options.
    public var rows: [(key: String, value: String, source: String)] {
        func row<T>(_ key: String, _ setting: Resolved<T>, _ text: (T) -> String) -> (String, String, String) {
            (key, text(setting.value), setting.source)
        }
        return [
            row("name", name) { $0 },
            row("host", host) { $0 },
            row("port", port) { String($0) },
            row("agent", agent) { $0 ?? "(built-in demo agent)" },
            row("agent-env", agentEnv) { $0.isEmpty ? "{}" : $0.keys.sorted().map { "\($0)=…" }.joined(separator: " ") },
            row("agent-cwd", agentCwd) { $0 ?? "(working-directory)" },
            row("working-directory", workingDirectory) { $0 },
            row("fs-scope", fsScope) { $0.rawValue },
            row("discovery", discovery) { $0.rawValue },
            row("interface", interface) { $0 ?? "(every interface)" },
            row("state-dir", stateDir) { $0 ?? "(XDG state directory)" },
            row("max-frame-size", maxFrameSize) { String($0) },
            row("max-connections", maxConnections) { String($0) },
            row("max-pending-per-address", maxPendingPerAddress) { String($0) },
            row("max-idle-sessions", maxIdleSessions) { String($0) },
            row("max-idle-replay-bytes", maxIdleReplayBytes) { String($0) },
            row("idle-session-timeout", idleSessionTimeout) { RetentionDuration.text($0) },
            row("log-level", logLevel) { $0.rawValue },
            row("log-format", logFormat) { $0.rawValue },
            row("auth", auth) { $0.rawValue },
            row("dpop", dpop) { $0.rawValue },
            row("require-approval", requireApproval) { String($0) },
            row("allow-network", allowNetwork) { $0.isEmpty ? "(none)" : $0.joined(separator: ",") },
            row("allow-plaintext", allowPlaintext) { String($0) },
            row("terminal", terminal) { String($0) },
            row("terminal-confinement", terminalConfinement) { $0.rawValue },
            row("sandbox-agent", sandboxAgent) { String($0) },
            row("sandbox-agent-write", sandboxAgentWrite) { $0.isEmpty ? "(none)" : $0.joined(separator: ",") },
            row("no-compression", noCompression) { String($0) },
        ]
    }
}

/// Picks each setting from the first source that has it: the flag, the environment, the file, the default.
struct SettingResolver {
    let environment: [String: String]
    let file: ConfigFile

    func pick<T: Sendable>(
        _ key: String, _ flag: T?, parse: (String) -> T?, expected: String, default fallback: T
    ) throws(ConfigError) -> Resolved<T> {
        if let flag { return Resolved(value: flag, source: "--\(key)") }
        if let found = try fromText(key, parse: parse, expected: expected) { return found }
        return Resolved(value: fallback, source: "default")
    }

    func pickOptional<T: Sendable>(_ key: String, _ flag: T?, parse: (String) -> T?, expected: String) throws(ConfigError) -> Resolved<T?> {
        if let flag { return Resolved(value: flag, source: "--\(key)") }
        if let found = try fromText(key, parse: parse, expected: expected) { return Resolved(value: found.value, source: found.source) }
        return Resolved(value: nil, source: "default")
    }

    private func fromText<T: Sendable>(_ key: String, parse: (String) -> T?, expected: String) throws(ConfigError) -> Resolved<T>? {
        let variable = ServeSettings.environmentName(key)
        if let text = environment[variable] {
            guard let value = parse(text) else { throw .badValue(key: key, value: text, source: variable, expected: expected) }
            return Resolved(value: value, source: variable)
        }
        if case .scalar(let text)? = file.values[key] {
            guard let value = parse(text) else { throw .badValue(key: key, value: text, source: file.path, expected: expected) }
            return Resolved(value: value, source: file.path)
        }
        return nil
    }

    static func bool(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "1", "true", "yes", "on": return true
        case "0", "false", "no", "off": return false
        default: return nil
        }
    }
}
