public import Foundation
import Yams

/// The YAML config file of `oa-bridge serve`: `$XDG_CONFIG_HOME/oa-bridge/config.yaml` (or `~/.config/…`), or the
/// file given with `--config` / `OA_BRIDGE_CONFIG`.
///
/// Keys are the long option names (`port: 9100`, `working-directory: /srv/work`).
public struct ConfigFile: Sendable {
    /// Where it was read from (or would be).
    public let path: String
    /// Whether the file exists.
    public let exists: Bool
    /// Key → scalar text, or a map for keys like `agent-env`.
    public let values: [String: ConfigValue]

    /// A value in the file.
    public enum ConfigValue: Sendable, Equatable {
        /// A scalar, as text (a YAML list is joined as a shell-quoted command line).
        case scalar(String)
        /// A mapping of names to text values (`agent-env`).
        case map([String: String])
    }

    /// A file's contents as already read.
    public init(path: String, exists: Bool, values: [String: ConfigValue]) {
        self.path = path
        self.exists = exists
        self.values = values
    }

    /// The default location: `$XDG_CONFIG_HOME/oa-bridge/config.yaml`, else `$HOME/.config/oa-bridge/config.yaml`.
    public static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") {
            return xdg + "/oa-bridge/config.yaml"
        }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return home + "/.config/oa-bridge/config.yaml"
    }

    /// Loads `explicit` (which must exist), else `OA_BRIDGE_CONFIG`, else the default path (which may be absent).
    public static func load(
        explicit: String?, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigError) -> ConfigFile {
        let path = explicit ?? environment["OA_BRIDGE_CONFIG"] ?? defaultPath(environment: environment)
        guard FileManager.default.fileExists(atPath: path) else {
            if explicit != nil { throw .missing(path) }
            return ConfigFile(path: path, exists: false, values: [:])
        }
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw .unreadable(path, error.localizedDescription)
        }
        return ConfigFile(path: path, exists: true, values: try parse(text, path: path))
    }

    /// Parses YAML text: a mapping of known keys (``ServeSettings/knownKeys``) to scalars, lists or string maps.
    public static func parse(_ text: String, path: String) throws(ConfigError) -> [String: ConfigValue] {
        let node: Node?
        do {
            node = try Yams.compose(yaml: text)
        } catch {
            throw .syntax(path, "\(error)")
        }
        guard let node else { return [:] }
        guard let mapping = node.mapping else { throw .syntax(path, "the top level must be a mapping of option: value") }
        var values: [String: ConfigValue] = [:]
        for (keyNode, valueNode) in mapping {
            guard let key = keyNode.string else { throw .syntax(path, "keys must be text") }
            guard ServeSettings.knownKeys.contains(key) else {
                throw .unknownKey(path, key, ServeSettings.knownKeys.sorted())
            }
            if let scalar = valueNode.scalar {
                values[key] = .scalar(scalar.string)
            } else if let map = valueNode.mapping {
                var result: [String: String] = [:]
                for (k, v) in map {
                    guard let name = k.string, let value = v.scalar?.string else {
                        throw .syntax(path, "'\(key)' must map names to text values")
                    }
                    result[name] = value
                }
                values[key] = .map(result)
            } else if let sequence = valueNode.sequence {
                // A list is joined as a command line, e.g. agent: [gemini, --acp].
                values[key] = .scalar(sequence.compactMap { $0.scalar?.string }.map(ConfigFile.shellQuote).joined(separator: " "))
            }
        }
        return values
    }

    /// `word` quoted for a shell when it holds blanks, quotes or backslashes.
    public static func shellQuote(_ word: String) -> String {
        guard word.contains(where: { " \t'\"\\".contains($0) }) else { return word }
        return "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}

/// Problems with the config file or a setting's value, each saying what to fix.
public enum ConfigError: Error, CustomStringConvertible, Equatable {
    /// The file given with `--config` does not exist.
    case missing(String)
    /// The file exists but cannot be read (path, reason).
    case unreadable(String, String)
    /// The file is not YAML of the expected shape (path, reason).
    case syntax(String, String)
    /// The file has a key that is not a setting (path, key, the known keys).
    case unknownKey(String, String, [String])
    /// A value that does not parse, with where it came from and what is expected.
    case badValue(key: String, value: String, source: String, expected: String)
    /// The agent command line cannot be split into words (why).
    case agentCommand(String)
    /// A choice this platform does not have (what to use instead).
    case unsupported(String)

    /// The message for the user.
    public var description: String {
        switch self {
        case .missing(let path):
            return "config file \(path) does not exist: create it, or use the default location"
        case .unreadable(let path, let reason):
            return "cannot read config file \(path): \(reason)"
        case .syntax(let path, let reason):
            return "config file \(path) is not valid: \(reason)"
        case .unknownKey(let path, let key, let known):
            return "config file \(path): unknown key '\(key)'; known keys: \(known.joined(separator: ", "))"
        case .badValue(let key, let value, let source, let expected):
            return "\(key) = '\(value)' (from \(source)) is not valid: expected \(expected)"
        case .agentCommand(let message):
            return "invalid agent command line: \(message)"
        case .unsupported(let message):
            return message
        }
    }
}
