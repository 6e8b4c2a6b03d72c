/// Two JSON values are equal when they hold the same data; numbers are equal when they are written the same way,
/// so a number the parser kept as text (``JSONNumber``) equals the `.double` Swift code makes of it when both write
/// the same JSON (`2.5`), while `1e3` and `1000.0` stay apart, as do `.int(1)` and `.double(1.0)`.
extension JSONValue {
    /// Equal when both are the same kind of JSON value with equal contents (numbers as the type comment says).
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let left), .bool(let right)): return left == right
        case (.int(let left), .int(let right)): return left == right
        case (.double(let left), .double(let right)): return left == right
        case (.number(let left), .number(let right)): return left == right
        case (.double(let left), .number(let right)), (.number(let right), .double(let left)):
            return left.isFinite && JSONValue.text(of: left) == right.text
        case (.string(let left), .string(let right)): return left == right
        case (.array(let left), .array(let right)): return left == right
        case (.object(let left), .object(let right)): return left == right
        default: return false
        }
    }

    /// Hashes the kind and contents, so values `==` calls equal hash alike.
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let value): hasher.combine(value)
        case .int(let value): hasher.combine(value)
        case .double(let value):
            // Hashed as its JSON text, like the parser's numbers it may equal; 0.0 and -0.0 are equal doubles.
            hasher.combine(value.isFinite ? JSONValue.text(of: value == 0 ? 0 : value) : "\(value)")
        case .number(let number):
            hasher.combine(number.text == "-0.0" ? "0.0" : number.text)
        case .string(let value): hasher.combine(value)
        case .array(let value): hasher.combine(value)
        case .object(let value): hasher.combine(value)
        }
    }

    /// How ``JSONWriter`` writes a finite double.
    static func text(of value: Double) -> String {
        "\(value)"
    }
}
