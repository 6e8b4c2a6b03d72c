import Foundation

extension JSONValue: Codable {
    /// Decodes any JSON value.
    ///
    /// Through `Decoder` the integer/double distinction is best effort (whole numbers come back
    /// as `.int`); use ``JSONValue/init(parsing:)`` to keep it exactly.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else if let value = try? container.decode([String: JSONValue].self) {
            self = .object(value)
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a JSON value")
        }
    }

    /// Encodes this value as the matching JSON type.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .number(let number):
            // Decimal keeps up to 38 digits exactly; beyond that the nearest Double is the best Encoder can do.
            if let decimal = Decimal(string: number.text), decimal.description == number.text {
                try container.encode(decimal)
            } else {
                try container.encode(number.doubleValue ?? 0)
            }
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}
