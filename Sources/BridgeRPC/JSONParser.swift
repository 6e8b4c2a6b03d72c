/// A strict RFC 8259 JSON parser over UTF-8 bytes that keeps every number exactly (see ``JSONValue/number(_:)``).
struct JSONParser {
    /// Nesting deeper than this is refused, so hostile input cannot exhaust the stack.
    static let maxDepth = 256

    private let storage: [UInt8]
    /// ``storage``'s bytes while ``parseDocument()`` runs (empty otherwise): read without bounds checks or retains.
    private var bytes = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
    private var index = 0
    private var depth = 0
    /// The members of the objects being read, innermost last: each object becomes a dictionary of exactly its size
    /// once complete, instead of one that grows (and rehashes) member by member.
    private var memberStack: [(String, JSONValue)] = []
    /// The elements of the arrays being read, innermost last.
    private var elementStack: [JSONValue] = []
    /// Where the value of the top-level object's `params` member is (byte offsets), when it is an object: what a relay
    /// forwards without encoding it again (``JSONRawParams``).
    private(set) var paramsSpan: Range<Int>?
    /// Whether some object repeated a key: its parsed value keeps only the last, so its bytes say more than it does.
    private(set) var repeatedKey = false

    init(text: String) {
        self.storage = Array(text.utf8)
    }

    init(bytes: [UInt8]) {
        self.storage = bytes
    }

    /// Parses exactly one value surrounded by optional whitespace.
    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        let storage = self.storage
        return try storage.withUnsafeBufferPointer { buffer throws(JSONParseError) in
            bytes = buffer
            defer { bytes = UnsafeBufferPointer(start: nil, count: 0) }
            return try parseBuffer()
        }
    }

    private mutating func parseBuffer() throws(JSONParseError) -> JSONValue {
        skipWhitespace()
        guard index < bytes.count else { throw fail("empty input: expected a JSON value") }
        let value = try parseValue()
        skipWhitespace()
        guard index == bytes.count else { throw fail("unexpected text after the JSON value") }
        return value
    }

    private func fail(_ message: String) -> JSONParseError {
        JSONParseError(message: message, offset: index)
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func parseValue() throws(JSONParseError) -> JSONValue {
        guard index < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw fail("unexpected character '\(Character(Unicode.Scalar(bytes[index])))'")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        let expected = UnsafeBufferPointer(start: literal.utf8Start, count: count)
        guard index + count <= bytes.count, UnsafeBufferPointer(rebasing: bytes[index..<(index + count)]).elementsEqual(expected) else {
            throw fail("invalid literal, expected \(literal)")
        }
        index += count
    }

    private mutating func enter() throws(JSONParseError) {
        depth += 1
        if depth > JSONParser.maxDepth { throw fail("nesting deeper than \(JSONParser.maxDepth) levels") }
    }

    private mutating func parseObject() throws(JSONParseError) -> JSONValue {
        try enter()
        defer { depth -= 1 }
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object([:])
        }
        let mark = memberStack.count
        defer { memberStack.removeSubrange(mark...) }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':' after key") }
            index += 1
            skipWhitespace()
            let start = index
            let value = try parseValue()
            if depth == 1, bytes[start] == UInt8(ascii: "{"), key == "params" { paramsSpan = start..<index }
            memberStack.append((key, value))
            skipWhitespace()
            guard index < bytes.count else { throw fail("unterminated object") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "}") {
                index += 1
                var members = [String: JSONValue](minimumCapacity: memberStack.count - mark)
                for position in mark..<memberStack.count {
                    // A repeated key keeps its last value.
                    repeatedKey = members.updateValue(memberStack[position].1, forKey: memberStack[position].0) != nil || repeatedKey
                }
                return .object(members)
            } else {
                throw fail("expected ',' or '}' in object")
            }
        }
    }

    private mutating func parseArray() throws(JSONParseError) -> JSONValue {
        try enter()
        defer { depth -= 1 }
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array([])
        }
        let mark = elementStack.count
        defer { elementStack.removeSubrange(mark...) }
        while true {
            skipWhitespace()
            let element = try parseValue()
            elementStack.append(element)
            skipWhitespace()
            guard index < bytes.count else { throw fail("unterminated array") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(Array(elementStack[mark...]))
            } else {
                throw fail("expected ',' or ']' in array")
            }
        }
    }

    /// An integer that fits in 64 bits becomes `.int`, read straight from the bytes (no allocation); every other
    /// number (fraction, exponent, `-0`, beyond 64 bits) becomes ``JSONNumber``, its text kept exactly as written.
    private mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = index
        let negative = bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw fail("invalid number") }
        var magnitude: UInt64 = 0
        var overflow = false
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, isDigit(bytes[index]) { throw fail("leading zeros are not allowed") }
        } else {
            while index < bytes.count, isDigit(bytes[index]) {
                let (times10, carry) = magnitude.multipliedReportingOverflow(by: 10)
                let (sum, carry2) = times10.addingReportingOverflow(UInt64(bytes[index] &- UInt8(ascii: "0")))
                overflow = overflow || carry || carry2
                magnitude = sum
                index += 1
            }
        }
        var isInteger = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw fail("expected digits after '.'") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw fail("expected digits in exponent") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if isInteger, !overflow {
            if !negative, magnitude <= UInt64(Int64.max) { return .int(Int64(magnitude)) }
            // -0 is kept as written; Int64.min's magnitude is one more than Int64.max.
            if negative, magnitude != 0, magnitude <= UInt64(Int64.max) + 1 { return .int(Int64(bitPattern: 0 &- magnitude)) }
        }
        return .number(JSONNumber(validatedText: String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)))
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private mutating func parseString() throws(JSONParseError) -> String {
        index += 1  // opening quote
        var runStart = index
        // Most strings have no escapes: made in one piece.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[runStart..<index]), as: UTF8.self)
                index += 1
                return text
            }
            if byte < 0x20 || byte == UInt8(ascii: "\\") { break }
            index += 1
        }
        var out = ""
        while true {
            guard index < bytes.count else { throw fail("unterminated string") }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                out += String(decoding: UnsafeBufferPointer(rebasing: bytes[runStart..<index]), as: UTF8.self)
                index += 1
                return out
            }
            if byte < 0x20 { throw fail("control character in string (must be escaped)") }
            if byte == UInt8(ascii: "\\") {
                out += String(decoding: UnsafeBufferPointer(rebasing: bytes[runStart..<index]), as: UTF8.self)
                index += 1
                guard index < bytes.count else { throw fail("unterminated escape") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): out += "\""
                case UInt8(ascii: "\\"): out += "\\"
                case UInt8(ascii: "/"): out += "/"
                case UInt8(ascii: "b"): out += "\u{08}"
                case UInt8(ascii: "f"): out += "\u{0C}"
                case UInt8(ascii: "n"): out += "\n"
                case UInt8(ascii: "r"): out += "\r"
                case UInt8(ascii: "t"): out += "\t"
                case UInt8(ascii: "u"):
                    let unit = try parseHex4()
                    if (0xD800...0xDBFF).contains(unit) {
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                            throw fail("unpaired surrogate in \\u escape")
                        }
                        index += 2
                        let low = try parseHex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw fail("invalid low surrogate in \\u escape") }
                        let value = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
                        guard let scalar = Unicode.Scalar(value) else { throw fail("invalid \\u escape") }
                        out.unicodeScalars.append(scalar)
                    } else {
                        guard let scalar = Unicode.Scalar(UInt32(unit)) else { throw fail("unpaired surrogate in \\u escape") }
                        out.unicodeScalars.append(scalar)
                    }
                default:
                    throw fail("invalid escape '\\\(Character(Unicode.Scalar(escape)))'")
                }
                runStart = index
                continue
            }
            index += 1
        }
    }

    private mutating func parseHex4() throws(JSONParseError) -> UInt16 {
        guard index + 4 <= bytes.count else { throw fail("truncated \\u escape") }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt16
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt16(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt16(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt16(byte - UInt8(ascii: "A") + 10)
            default: throw fail("invalid hex digit in \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }
}
