import Foundation

/// Any JSON value, keeping integers and other numbers apart so that every number survives a round trip as written.
///
/// The parser makes `.int` of every integer that fits in 64 bits and ``JSONNumber`` (the original text) of every
/// other number, so `1.50`, `1e3` and `123456789012345678901234567890` are written back byte for byte; `.double`
/// only comes from Swift code (literals, `Decodable`).
///
/// Objects are unordered: key order is not preserved (the writer emits keys sorted, for stable output).
public enum JSONValue: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number written without fraction or exponent that fits in 64 bits.
    case int(Int64)
    /// A number made in Swift code (a literal, a decoded `Double`); written in Swift's shortest round-trip form.
    case double(Double)
    /// A number read by the parser that `.int` cannot hold, exactly as it was written (see ``JSONNumber``).
    case number(JSONNumber)
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

    /// The integer, if this is an integer (or another number with no fractional part that fits in 64 bits).
    public var intValue: Int64? {
        switch self {
        case .int(let value): return value
        case .double(let value):
            guard let exact = Int64(exactly: value) else { return nil }
            return exact
        case .number(let number): return number.int64Value
        default: return nil
        }
    }

    /// The nearest `Double`, if this is a number within `Double`'s range.
    public var doubleValue: Double? {
        switch self {
        case .int(let value): return Double(value)
        case .double(let value): return value.isFinite ? value : nil
        case .number(let number): return number.doubleValue
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
        case .int, .double, .number: return "number"
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
