/// A JSON-RPC 2.0 request id: a string, a number or `null`, echoed back with the JSON type it arrived with.
public enum JSONRPCID: Sendable, Hashable, CustomStringConvertible {
    /// A string id, for example `"1"`.
    case string(String)
    /// An integer id, for example `1`.
    case int(Int64)
    /// A number id made in Swift code with a fraction (discouraged by the spec).
    case double(Double)
    /// A number id that is not an `Int64` (a fraction, an exponent, beyond 64 bits), echoed byte for byte as it came.
    case number(JSONNumber)
    /// The `null` id (used in errors about requests whose id could not be read).
    case null

    /// Reads an id from a JSON value; `nil` if the value is not a valid id type (object, array, boolean).
    public init?(_ value: JSONValue) {
        switch value {
        case .string(let text): self = .string(text)
        case .int(let number): self = .int(number)
        case .double(let number): self = .double(number)
        case .number(let number): self = .number(number)
        case .null: self = .null
        default: return nil
        }
    }

    /// The id as a JSON value.
    public var jsonValue: JSONValue {
        switch self {
        case .string(let text): return .string(text)
        case .int(let number): return .int(number)
        case .double(let number): return .double(number)
        case .number(let number): return .number(number)
        case .null: return .null
        }
    }

    /// The id as JSON text (`"1"`, `1`, `null`).
    public var description: String { jsonValue.jsonText }
}
