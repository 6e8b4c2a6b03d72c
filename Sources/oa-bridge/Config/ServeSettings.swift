import BridgeServer
import Foundation
import Logging

/// A setting's value and where it came from, for `oa-bridge config show`.
struct Resolved<Value: Sendable>: Sendable {
    var value: Value
    var source: String
}

/// The effective settings of `oa-bridge serve`: command line, then `OA_BRIDGE_*` environment
/// variables, then the config file, then defaults.
struct ServeSettings: Sendable {
    var name: Resolved<String>
    var host: Resolved<String>
    var port: Resolved<Int>
    var agent: Resolved<String?>
    var agentEnv: Resolved<[String: String]>
    var agentCwd: Resolved<String?>
    var workingDirectory: Resolved<String>
    var discovery: Resolved<DiscoveryChoice>
    var stateDir: Resolved<String?>
    var maxFrameSize: Resolved<Int>
    var maxConnections: Resolved<Int>
    var maxPendingPerAddress: Resolved<Int>
    var logLevel: Resolved<Logger.Level>
    var logFormat: Resolved<LoggingSetup.Format>
    var auth: Resolved<AuthMode>
    var requireApproval: Resolved<Bool>
    var allowNetwork: Resolved<[String]>
    var allowPlaintext: Resolved<Bool>
    /// The config file consulted.
    var configPath: String
    var configExists: Bool

    /// Every key a config file may hold (the long option names).
    static let knownKeys: Set<String> = [
        "name", "host", "port", "agent", "agent-env", "agent-cwd", "working-directory", "discovery", "state-dir",
        "max-frame-size", "max-connections", "max-pending-per-address", "log-level", "log-format", "auth", "require-approval", "allow-network",
        "allow-plaintext",
    ]

    /// The environment variable for a key: `max-frame-size` → `OA_BRIDGE_MAX_FRAME_SIZE`.
    static func environmentName(_ key: String) -> String {
        "OA_BRIDGE_" + key.uppercased().replacingOccurrences(of: "-", with: "_")
    }

    static func resolve(_ options: ServeOptions, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> ServeSettings {
        let file = try ConfigFile.load(explicit: options.config, environment: environment)
        let resolver = Resolver(environment: environment, file: file)
        let agentEnv: Resolved<[String: String]>
        if case .map(let map)? = file.values["agent-env"] {
            agentEnv = Resolved(value: map, source: file.path)
        } else if file.values["agent-env"] != nil {
            throw ConfigError.badValue(key: "agent-env", value: "…", source: file.path, expected: "a mapping of NAME: value")
        } else {
            agentEnv = Resolved(value: [:], source: "default")
        }
        return ServeSettings(
            name: try resolver.pick("name", options.name, parse: { $0.isEmpty || $0.utf8.count > 63 ? nil : $0 }, expected: "1 to 63 bytes", default: HostName.current),
            host: try resolver.pick("host", options.host, parse: { $0.isEmpty ? nil : $0 }, expected: "an address", default: BridgeServerConfiguration.dualStackHost),
            port: try resolver.pick("port", options.port, parse: { Int($0).flatMap { (0...65_535).contains($0) ? $0 : nil } }, expected: "a port from 0 to 65535", default: 9099),
            agent: try resolver.pickOptional("agent", options.agent, parse: { $0 }, expected: "a command line"),
            agentEnv: agentEnv,
            agentCwd: try resolver.pickOptional("agent-cwd", options.agentCwd, parse: { $0 }, expected: "a directory"),
            workingDirectory: try resolver.pick("working-directory", options.workingDirectory, parse: { $0 }, expected: "a directory", default: FileManager.default.currentDirectoryPath),
            discovery: try resolver.pick("discovery", options.discovery, parse: DiscoveryChoice.init(rawValue:), expected: "avahi, dnssd or off", default: .platformDefault),
            stateDir: try resolver.pickOptional("state-dir", options.stateDir, parse: { $0 }, expected: "a directory"),
            maxFrameSize: try resolver.pick("max-frame-size", options.maxFrameSize, parse: { Int($0).flatMap { $0 >= 1_024 ? $0 : nil } }, expected: "a number of bytes, at least 1024", default: 1 << 20),
            maxConnections: try resolver.pick("max-connections", options.maxConnections, parse: { Int($0).flatMap { $0 >= 1 ? $0 : nil } }, expected: "a number of connections, at least 1", default: 1_024),
            maxPendingPerAddress: try resolver.pick("max-pending-per-address", options.maxPendingPerAddress, parse: { Int($0).flatMap { $0 >= 1 ? $0 : nil } }, expected: "a number of connections, at least 1", default: 128),
            logLevel: try resolver.pick("log-level", options.logLevel, parse: Logger.Level.init(rawValue:), expected: "trace, debug, info, notice, warning, error or critical", default: .info),
            logFormat: try resolver.pick("log-format", options.logFormat, parse: LoggingSetup.Format.init(rawValue:), expected: "text or json", default: .text),
            auth: try resolver.pick("auth", options.auth, parse: AuthMode.init(rawValue:), expected: "token or none", default: .token),
            requireApproval: try resolver.pick("require-approval", options.requireApproval, parse: Resolver.bool, expected: "true or false", default: false),
            allowNetwork: try resolver.pick("allow-network", options.allowNetwork.isEmpty ? nil : options.allowNetwork,
                                            parse: { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } },
                                            expected: "CIDR networks, comma-separated", default: []),
            allowPlaintext: try resolver.pick("allow-plaintext", options.allowPlaintext, parse: Resolver.bool, expected: "true or false", default: false),
            configPath: file.path,
            configExists: file.exists)
    }

    /// `(key, value, source)` rows for `config show`.
    var rows: [(key: String, value: String, source: String)] {
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
            row("discovery", discovery) { $0.rawValue },
            row("state-dir", stateDir) { $0 ?? "(XDG state directory)" },
            row("max-frame-size", maxFrameSize) { String($0) },
            row("max-connections", maxConnections) { String($0) },
            row("max-pending-per-address", maxPendingPerAddress) { String($0) },
            row("log-level", logLevel) { $0.rawValue },
            row("log-format", logFormat) { $0.rawValue },
            row("auth", auth) { $0.rawValue },
            row("require-approval", requireApproval) { String($0) },
            row("allow-network", allowNetwork) { $0.isEmpty ? "(none)" : $0.joined(separator: ",") },
            row("allow-plaintext", allowPlaintext) { String($0) },
        ]
    }
}

/// Picks each setting from the first source that has it.
struct Resolver {
    let environment: [String: String]
    let file: ConfigFile

    func pick<T: Sendable>(_ key: String, _ flag: T?, parse: (String) -> T?, expected: String, default fallback: T) throws -> Resolved<T> {
        if let flag { return Resolved(value: flag, source: "--\(key)") }
        if let found = try fromText(key, parse: parse, expected: expected) { return found }
        return Resolved(value: fallback, source: "default")
    }

    func pickOptional<T: Sendable>(_ key: String, _ flag: T?, parse: (String) -> T?, expected: String) throws -> Resolved<T?> {
        if let flag { return Resolved(value: flag, source: "--\(key)") }
        if let found = try fromText(key, parse: parse, expected: expected) { return Resolved(value: found.value, source: found.source) }
        return Resolved(value: nil, source: "default")
    }

    private func fromText<T: Sendable>(_ key: String, parse: (String) -> T?, expected: String) throws -> Resolved<T>? {
        let variable = ServeSettings.environmentName(key)
        if let text = environment[variable] {
            guard let value = parse(text) else { throw ConfigError.badValue(key: key, value: text, source: variable, expected: expected) }
            return Resolved(value: value, source: variable)
        }
        if case .scalar(let text)? = file.values[key] {
            guard let value = parse(text) else { throw ConfigError.badValue(key: key, value: text, source: file.path, expected: expected) }
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
