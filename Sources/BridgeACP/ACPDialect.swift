public import BridgeRPC

/// The wire dialect a client speaks, chosen per connection from its `initialize` request.
public enum ACPDialect: Sendable, Hashable, CustomStringConvertible {
    /// The seed dialect: snake_case fields, `protocol_version` a string "0.2.x" (the version the client sent).
    case seed(version: String)
    /// Official ACP v1: camelCase fields, `protocolVersion` the integer 1.
    case v1

    /// The ACP major version the bridge speaks with official clients and agents.
    public static let officialVersion: Int64 = 1
    /// The seed versions served, for error messages.
    public static let seedVersionsServed = "0.2.x"

    /// Reads the dialect from `initialize` params: `protocol_version` "0.2.x" is the seed dialect,
    /// an integer `protocolVersion` is official ACP (answered with 1, the latest served, as ACP's negotiation says).
    public static func negotiate(initializeParams params: JSONValue?) throws(JSONRPCError) -> ACPDialect {
        guard let params, case .object(let members) = params else {
            throw JSONRPCError.invalidParams(
                "initialize needs params with protocolVersion (1) or protocol_version (\"0.2.x\")",
                data: served)
        }
        if let seed = members["protocol_version"] {
            guard case .string(let version) = seed else {
                throw JSONRPCError.invalidParams(
                    "protocol_version must be a string like \"0.2.2\", got \(seed.jsonText); served: \"0.2.x\" (snake_case) and protocolVersion 1 (camelCase)",
                    data: served)
            }
            guard isSeedVersion(version) else {
                throw JSONRPCError.invalidParams(
                    "protocol_version \"\(version)\" is not served; this bridge serves \"0.2.x\" (snake_case) and protocolVersion 1 (camelCase)",
                    data: served)
            }
            return .seed(version: version)
        }
        if let official = members["protocolVersion"] {
            guard case .int(let number) = official, number >= 1 else {
                throw JSONRPCError.invalidParams(
                    "protocolVersion must be an integer (this bridge serves 1), got \(official.jsonText); the seed dialect uses protocol_version \"0.2.x\"",
                    data: served)
            }
            return .v1
        }
        throw JSONRPCError.invalidParams(
            "initialize needs protocolVersion (1) or protocol_version (\"0.2.x\")", data: served)
    }

    /// `{"served": ["0.2.x", 1]}`, the data of version errors.
    public static var served: JSONValue { ["served": [.string(seedVersionsServed), .int(officialVersion)]] }

    /// Whether `version` is "0.2" or "0.2.<digits>".
    public static func isSeedVersion(_ version: String) -> Bool {
        let parts = version.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2 || parts.count == 3, parts[0] == "0", parts[1] == "2" else { return false }
        if parts.count == 3 {
            return !parts[2].isEmpty && parts[2].allSatisfy { $0.isASCII && $0.isNumber }
        }
        return true
    }

    /// Whether this is the seed dialect.
    public var isSeed: Bool {
        if case .seed = self { return true }
        return false
    }

    /// A value from this client, in official ACP spelling (for the agent).
    public func toAgent(_ value: JSONValue) -> JSONValue {
        isSeed ? ACPKeyCase.toCamelCase(value) : value
    }

    /// A value from the agent (official ACP), in this client's spelling.
    public func toClient(_ value: JSONValue) -> JSONValue {
        isSeed ? ACPKeyCase.toSnakeCase(value) : value
    }

    /// A value from this client in official spelling; two keys that would become one are an error.
    ///
    /// Members named in `keeping` (top level) are kept with their contents (for example an elicitation answer's
    /// `content`).
    public func checkedToAgent(_ value: JSONValue, keeping: Set<String> = []) throws(ACPKeyCollision) -> JSONValue {
        isSeed ? try ACPKeyCase.checkedCamelCase(value, keeping: keeping) : value
    }

    /// A value from the agent in this client's spelling; two keys that would become one are an error.
    public func checkedToClient(_ value: JSONValue, keeping: Set<String> = []) throws(ACPKeyCollision) -> JSONValue {
        isSeed ? try ACPKeyCase.checkedSnakeCase(value, keeping: keeping) : value
    }

    /// An error from the agent, with its data in this client's spelling.
    public func toClient(_ error: JSONRPCError) -> JSONRPCError {
        var converted = error
        converted.data = error.data.map(toClient)
        return converted
    }

    /// An error from this client, with its data in official spelling.
    public func toAgent(_ error: JSONRPCError) -> JSONRPCError {
        var converted = error
        converted.data = error.data.map(toAgent)
        return converted
    }

    /// A field name in this dialect's spelling, given its camelCase form.
    public func key(_ camelCase: String) -> String {
        isSeed ? ACPKeyCase.snakeCase(camelCase) : camelCase
    }

    /// "seed 0.2.2" or "ACP v1".
    public var description: String {
        switch self {
        case .seed(let version): return "seed \(version)"
        case .v1: return "ACP v1"
        }
    }
}
