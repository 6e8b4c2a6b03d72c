/// A JSON number kept exactly as it was written, for numbers that `Int64` cannot hold: a fraction (`1.50`), an
/// exponent (`1e3`), negative zero (`-0`), or an integer beyond 64 bits (`123456789012345678901234567890`).
///
/// The parser keeps such numbers as their original text so that they are written back byte for byte (a JSON-RPC id
/// must be echoed exactly); converting to `Double` happens only when someone asks (``doubleValue``).
public struct JSONNumber: Sendable, Hashable, CustomStringConvertible {
    /// The number's text, exactly as written (always a valid JSON number, no surrounding whitespace).
    public let text: String

    /// The number written as `text`, or `nil` when `text` is not exactly one JSON number (RFC 8259 grammar, no
    /// whitespace around it).
    public init?(_ text: String) {
        guard JSONNumber.isValid(text.utf8) else { return nil }
        self.text = text
    }

    /// For the parser, which has already checked the grammar.
    init(validatedText text: String) {
        self.text = text
    }

    /// The nearest `Double`, or `nil` when the number is beyond `Double`'s range (`1e400`).
    public var doubleValue: Double? {
        guard let value = Double(text), value.isFinite else { return nil }
        return value
    }

    /// The number as an `Int64` when it is a whole number that fits (`1e3` is 1000, `1.5` is `nil`).
    public var int64Value: Int64? {
        if let exact = Int64(text) { return exact }
        guard let value = doubleValue else { return nil }
        return Int64(exactly: value)
    }

    /// The text.
    public var description: String { text }

    /// Whether `bytes` are exactly one JSON number: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    static func isValid(_ bytes: some Collection<UInt8>) -> Bool {
        var rest = bytes[...]
        func digits() -> Int {
            let count = rest.prefix(while: { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }).count
            rest = rest.dropFirst(count)
            return count
        }
        if rest.first == UInt8(ascii: "-") { rest = rest.dropFirst() }
        if rest.first == UInt8(ascii: "0") {
            rest = rest.dropFirst()
        } else {
            guard rest.first != nil, digits() > 0 else { return false }
        }
        if rest.first == UInt8(ascii: ".") {
            rest = rest.dropFirst()
            guard digits() > 0 else { return false }
        }
        if rest.first == UInt8(ascii: "e") || rest.first == UInt8(ascii: "E") {
            rest = rest.dropFirst()
            if rest.first == UInt8(ascii: "+") || rest.first == UInt8(ascii: "-") { rest = rest.dropFirst() }
            guard digits() > 0 else { return false }
        }
        return rest.isEmpty
    }
}
