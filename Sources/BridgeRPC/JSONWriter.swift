/// Writes compact JSON text: no insignificant whitespace, object keys sorted, non-ASCII as UTF-8.
struct JSONWriter {
    private(set) var output = ""

    mutating func write(_ value: JSONValue) {
        switch value {
        case .null: output += "null"
        case .bool(let flag): output += flag ? "true" : "false"
        case .int(let number): output += String(number)
        case .double(let number):
            // JSON has no NaN or infinity; `null` is what JavaScript's JSON.stringify writes for them.
            output += number.isFinite ? "\(number)" : "null"
        case .string(let text): writeString(text)
        case .array(let elements):
            output += "["
            for (position, element) in elements.enumerated() {
                if position > 0 { output += "," }
                write(element)
            }
            output += "]"
        case .object(let members):
            output += "{"
            for (position, key) in members.keys.sorted().enumerated() {
                if position > 0 { output += "," }
                writeString(key)
                output += ":"
                if let member = members[key] { write(member) }
            }
            output += "}"
        }
    }

    /// Writes `key:value` pairs in the given order, for envelopes whose field order is conventional.
    mutating func writeOrderedObject(_ members: [(String, JSONValue)]) {
        output += "{"
        for (position, member) in members.enumerated() {
            if position > 0 { output += "," }
            writeString(member.0)
            output += ":"
            write(member.1)
        }
        output += "}"
    }

    mutating func writeRaw(_ text: String) {
        output += text
    }

    mutating func writeString(_ text: String) {
        output += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case "\u{08}": output += "\\b"
            case "\u{0C}": output += "\\f"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    output.unicodeScalars.append(scalar)
                }
            }
        }
        output += "\""
    }
}
