import Foundation

/// Any JSON value, keeping integers and doubles apart so that `1` and `1.0` survive a round trip as written.
///
/// Objects are unordered: key order is not preserved (the writer emits keys sorted, for stable output).
public enum JSONValue: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number written without fraction or exponent that fits in 64 bits.
    case int(Int64)
    /// Any other number.
    case double(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object.
    case object([String: JSONValue])
}

extension JSONValue {
    /// The member `key` if this is an object that has it, else `nil`.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The string, if this is a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The integer, if this is an integer (or a double with no fractional part that fits).
    public var intValue: Int64? {
        switch self {
        case .int(let value): return value
        case .double(let value):
            guard let exact = Int64(exactly: value) else { return nil }
            return exact
        default: return nil
        }
    }

    /// The boolean, if this is a boolean.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The members, if this is an object.
    public var objectValue: [String: JSONValue]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The elements, if this is an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    /// Whether this is `null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The JSON type name, for error messages ("object", "string", ...).
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "boolean"
        case .int, .double: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }

    /// Parses `text` as one JSON value.
    public init(parsing text: String) throws(JSONParseError) {
        var parser = JSONParser(text: text)
        self = try parser.parseDocument()
    }

    /// Parses UTF-8 bytes as one JSON value (what ``init(parsing:)`` does, without making a `String` first).
    public init(parsingUTF8 bytes: [UInt8]) throws(JSONParseError) {
        var parser = JSONParser(bytes: bytes)
        self = try parser.parseDocument()
    }

    /// This value as compact JSON text (no insignificant whitespace, object keys sorted).
    public var jsonText: String {
        var writer = JSONWriter()
        writer.write(self)
        return writer.output
    }
}

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    /// `null`.
    public init(nilLiteral: ()) { self = .null }
    /// A boolean.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An integer.
    public init(integerLiteral value: Int64) { self = .int(value) }
    /// A double.
    public init(floatLiteral value: Double) { self = .double(value) }
    /// A string.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An array.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// An object; a repeated key keeps its last value.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension JSONValue: CustomStringConvertible {
    /// The compact JSON text.
    public var description: String { jsonText }
}
