import Foundation
import Yams

/// The YAML config file: `$XDG_CONFIG_HOME/oa-bridge/config.yaml` (or `~/.config/…`), or `--config`.
/// Keys are the long option names (`port: 9100`, `working-directory: /srv/work`).
struct ConfigFile: Sendable {
    /// Where it was read from (or would be).
    let path: String
    /// Whether the file exists.
    let exists: Bool
    /// Key → scalar text, or a map for keys like `agent-env`.
    let values: [String: ConfigValue]

    /// A value in the file.
    enum ConfigValue: Sendable, Equatable {
        case scalar(String)
        case map([String: String])
    }

    /// The default location.
    static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") {
            return xdg + "/oa-bridge/config.yaml"
        }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return home + "/.config/oa-bridge/config.yaml"
    }

    /// Loads `explicit` (which must exist) or the default path (which may be absent).
    static func load(explicit: String?, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> ConfigFile {
        let path = explicit ?? environment["OA_BRIDGE_CONFIG"] ?? defaultPath(environment: environment)
        guard FileManager.default.fileExists(atPath: path) else {
            if explicit != nil { throw ConfigError.missing(path) }
            return ConfigFile(path: path, exists: false, values: [:])
        }
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ConfigError.unreadable(path, error.localizedDescription)
        }
        return ConfigFile(path: path, exists: true, values: try parse(text, path: path))
    }

    /// Parses YAML text: a mapping of known keys to scalars (or string maps).
    static func parse(_ text: String, path: String) throws -> [String: ConfigValue] {
        let node: Node?
        do {
            node = try Yams.compose(yaml: text)
        } catch {
            throw ConfigError.syntax(path, "\(error)")
        }
        guard let node else { return [:] }
        guard let mapping = node.mapping else { throw ConfigError.syntax(path, "the top level must be a mapping of option: value") }
        var values: [String: ConfigValue] = [:]
        for (keyNode, valueNode) in mapping {
            guard let key = keyNode.string else { throw ConfigError.syntax(path, "keys must be text") }
            guard ServeSettings.knownKeys.contains(key) else {
                throw ConfigError.unknownKey(path, key, ServeSettings.knownKeys.sorted())
            }
            if let scalar = valueNode.scalar {
                values[key] = .scalar(scalar.string)
            } else if let map = valueNode.mapping {
                var result: [String: String] = [:]
                for (k, v) in map {
                    guard let name = k.string, let value = v.scalar?.string else {
                        throw ConfigError.syntax(path, "'\(key)' must map names to text values")
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

    static func shellQuote(_ word: String) -> String {
        guard word.contains(where: { " \t'\"\\".contains($0) }) else { return word }
        return "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}

/// Problems with the config file, with the fix.
enum ConfigError: Error, CustomStringConvertible {
    case missing(String)
    case unreadable(String, String)
    case syntax(String, String)
    case unknownKey(String, String, [String])
    case badValue(key: String, value: String, source: String, expected: String)

    var description: String {
        switch self {
        case .missing(let path):
            return "config file \(path) does not exist (create it, or leave out --config to use the default location)"
        case .unreadable(let path, let reason):
            return "cannot read config file \(path): \(reason)"
        case .syntax(let path, let reason):
            return "config file \(path) is not valid: \(reason)"
        case .unknownKey(let path, let key, let known):
            return "config file \(path): unknown key '\(key)'; known keys: \(known.joined(separator: ", "))"
        case .badValue(let key, let value, let source, let expected):
            return "\(key) = '\(value)' (from \(source)) is not valid: expected \(expected)"
        }
    }
}
