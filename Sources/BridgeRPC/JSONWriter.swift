/// Writes compact JSON text: no insignificant whitespace, object keys sorted, non-ASCII as UTF-8.
///
/// It appends UTF-8 bytes to one buffer; a string with nothing to escape is copied in one piece.
struct JSONWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    /// The text written so far.
    var output: String { String(decoding: bytes, as: UTF8.self) }

    mutating func write(_ value: JSONValue) {
        switch value {
        case .null: writeASCII("null")
        case .bool(let flag): writeASCII(flag ? "true" : "false")
        case .int(let number): writeASCII(String(number))
        case .double(let number):
            // JSON has no NaN or infinity; `null` is what JavaScript's JSON.stringify writes for them.
            writeASCII(number.isFinite ? "\(number)" : "null")
        case .number(let number):
            // Checked JSON number grammar (the parser's or JSONNumber's): written exactly as it came.
            writeASCII(number.text)
        case .string(let text): writeString(text)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            var first = true
            for element in elements {
                if !first { bytes.append(UInt8(ascii: ",")) }
                first = false
                write(element)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            var first = true
            for (key, member) in members.sorted(by: { $0.key < $1.key }) {
                if !first { bytes.append(UInt8(ascii: ",")) }
                first = false
                writeString(key)
                bytes.append(UInt8(ascii: ":"))
                write(member)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// Writes `key:value` pairs in the given order, for envelopes whose field order is conventional.
    mutating func writeOrderedObject(_ members: [(String, JSONValue)]) {
        bytes.append(UInt8(ascii: "{"))
        for (position, member) in members.enumerated() {
            if position > 0 { bytes.append(UInt8(ascii: ",")) }
            writeString(member.0)
            bytes.append(UInt8(ascii: ":"))
            write(member.1)
        }
        bytes.append(UInt8(ascii: "}"))
    }

    private mutating func writeASCII(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    mutating func writeString(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            var runStart = 0
            for position in 0..<utf8.count {
                let byte = utf8[position]
                // Everything from 0x20 up except `"` and `\` (non-ASCII included) is written as it is.
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<position]))
                writeEscape(byte)
                runStart = position + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<utf8.count]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func writeEscape(_ byte: UInt8) {
        bytes.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""): bytes.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\"))
        case 0x0A: bytes.append(UInt8(ascii: "n"))
        case 0x0D: bytes.append(UInt8(ascii: "r"))
        case 0x09: bytes.append(UInt8(ascii: "t"))
        case 0x08: bytes.append(UInt8(ascii: "b"))
        case 0x0C: bytes.append(UInt8(ascii: "f"))
        default:
            // \u00XX, lower-case hex.
            let hex: [UInt8] = Array("0123456789abcdef".utf8)
            bytes.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]])
        }
    }
}
