import BridgeRPC

/// Converts object keys between the seed dialect's snake_case and official ACP's camelCase.
///
/// The rule, applied recursively to every object in a relayed message (params, results, error data):
/// - every key is converted (`session_id` <-> `sessionId`, `tool_call_id` <-> `toolCallId`); values never are
///   (`"agent_message_chunk"`, `"end_turn"` stay as they are);
/// - keys starting with `_` (`_meta` and other extension fields) are kept, and so is everything under them;
/// - the values of free-form maps are kept as they are, keys included: ``freeFormKeys``
///   (`rawInput`/`rawOutput` of tool calls, `env` and `headers` of MCP servers and terminals).
public enum ACPKeyCase {
    /// Keys whose values are free-form data and are relayed untouched, in both spellings.
    public static let freeFormKeys: Set<String> = [
        "rawInput", "raw_input", "rawOutput", "raw_output", "env", "headers",
    ]

    /// `tool_call_id` -> `toolCallId`. Keys without underscores, or starting with one, are returned as they are.
    public static func camelCase(_ key: String) -> String {
        guard !key.hasPrefix("_"), key.contains("_") else { return key }
        var result = ""
        var upperNext = false
        for character in key {
            if character == "_" {
                upperNext = true
            } else if upperNext {
                result += character.uppercased()
                upperNext = false
            } else {
                result.append(character)
            }
        }
        return result
    }

    /// `toolCallId` -> `tool_call_id`. Keys starting with `_` are returned as they are.
    public static func snakeCase(_ key: String) -> String {
        guard !key.hasPrefix("_") else { return key }
        var result = ""
        for character in key {
            if character.isUppercase {
                if !result.isEmpty { result += "_" }
                result += character.lowercased()
            } else {
                result.append(character)
            }
        }
        return result
    }

    /// `value` with every object key converted to camelCase, following the rule above.
    public static func toCamelCase(_ value: JSONValue) -> JSONValue {
        convert(value, using: camelCase)
    }

    /// `value` with every object key converted to snake_case, following the rule above.
    public static func toSnakeCase(_ value: JSONValue) -> JSONValue {
        convert(value, using: snakeCase)
    }

    private static func convert(_ value: JSONValue, using rename: (String) -> String) -> JSONValue {
        switch value {
        case .array(let elements):
            return .array(elements.map { convert($0, using: rename) })
        case .object(let members):
            var converted: [String: JSONValue] = [:]
            converted.reserveCapacity(members.count)
            for (key, member) in members {
                if key.hasPrefix("_") || freeFormKeys.contains(key) {
                    converted[rename(key)] = member
                } else {
                    converted[rename(key)] = convert(member, using: rename)
                }
            }
            return .object(converted)
        default:
            return value
        }
    }
}
