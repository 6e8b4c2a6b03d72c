public import BridgeRPC

/// Converts object keys between the seed dialect's snake_case and official ACP's camelCase.
///
/// The rule, applied recursively to every object in a relayed message (params, results, error data):
/// - every key is converted (`session_id` <-> `sessionId`, `tool_call_id` <-> `toolCallId`); values never are
///   (`"agent_message_chunk"`, `"end_turn"` stay as they are);
/// - keys starting with `_` (`_meta` and other extension fields) are kept, and so is everything under them;
/// - the values of free-form maps are kept as they are, keys included: ``freeFormKeys``
///   (`rawInput`/`rawOutput` of tool calls, `env` and `headers` of MCP servers and terminals, the JSON Schema of an
///   elicitation's `requestedSchema`);
/// - two keys of one object that convert to the same key (`fooBar` and `foo_bar`) are an error
///   (``ACPKeyCollision``), never a silent merge, in the checked conversions.
public enum ACPKeyCase {
    /// Keys whose values are free-form data and are relayed untouched, in both spellings.
    public static let freeFormKeys: Set<String> = [
        "rawInput", "raw_input", "rawOutput", "raw_output", "env", "headers", "requestedSchema", "requested_schema",
    ]

    /// `tool_call_id` -> `toolCallId`.
    ///
    /// Keys without underscores, or starting with one, are returned as they are.
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

    /// `toolCallId` -> `tool_call_id`.
    ///
    /// Keys starting with `_` are returned as they are.
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

    /// `value` with every object key converted to camelCase; throws when two keys of one object would become one.
    ///
    /// Members named in `keeping` (top level only) are kept with their contents, like free-form data.
    public static func checkedCamelCase(_ value: JSONValue, keeping: Set<String> = []) throws(ACPKeyCollision) -> JSONValue {
        var collision: ACPKeyCollision?
        let converted = convert(value, using: camelCase, keeping: keeping, collision: &collision)
        if let collision { throw collision }
        return converted
    }

    /// `value` with every object key converted to snake_case; throws when two keys of one object would become one.
    ///
    /// Members named in `keeping` (top level only) are kept with their contents, like free-form data.
    public static func checkedSnakeCase(_ value: JSONValue, keeping: Set<String> = []) throws(ACPKeyCollision) -> JSONValue {
        var collision: ACPKeyCollision?
        let converted = convert(value, using: snakeCase, keeping: keeping, collision: &collision)
        if let collision { throw collision }
        return converted
    }

    private static func convert(_ value: JSONValue, using rename: (String) -> String) -> JSONValue {
        var ignored: ACPKeyCollision?
        return convert(value, using: rename, keeping: [], collision: &ignored)
    }

    private static func convert(
        _ value: JSONValue, using rename: (String) -> String, keeping: Set<String>, collision: inout ACPKeyCollision?
    ) -> JSONValue {
        switch value {
        case .array(let elements):
            return .array(elements.map { convert($0, using: rename, keeping: [], collision: &collision) })
        case .object(let members):
            var converted: [String: JSONValue] = [:]
            converted.reserveCapacity(members.count)
            for (key, member) in members {
                let renamed = keeping.contains(key) || key.hasPrefix("_") ? key : rename(key)
                if converted[renamed] != nil, collision == nil {
                    collision = ACPKeyCollision(key: renamed, sources: members.keys.filter { $0 == renamed || rename($0) == renamed }.sorted())
                }
                if key.hasPrefix("_") || freeFormKeys.contains(key) || keeping.contains(key) {
                    converted[renamed] = member
                } else {
                    converted[renamed] = convert(member, using: rename, keeping: [], collision: &collision)
                }
            }
            return .object(converted)
        default:
            return value
        }
    }
}

/// Two keys of one object that the dialect conversion would turn into the same key (`fooBar` and `foo_bar`).
public struct ACPKeyCollision: Error, Sendable, Equatable, CustomStringConvertible {
    /// The key both would become.
    public let key: String
    /// The keys as sent.
    public let sources: [String]

    /// `sources` (sorted) would all become `key`.
    public init(key: String, sources: [String]) {
        self.key = key
        self.sources = sources.sorted()
    }

    /// The JSON-RPC error a client gets for it (-32602 for what it sent, -32603 for what the agent sent).
    public func rpcError(fromClient: Bool) -> JSONRPCError {
        let detail = "keys \(sources.joined(separator: " and ")) both become \(key) in the other dialect; send only one"
        let data: JSONValue = ["key": .string(key), "sources": .array(sources.map { .string($0) })]
        return fromClient ? JSONRPCError.invalidParams(detail, data: data)
            : JSONRPCError.internalError("the agent sent \(detail)", data: data)
    }

    /// "keys a and b collide as c".
    public var description: String { "keys \(sources.joined(separator: " and ")) collide as \(key)" }
}
