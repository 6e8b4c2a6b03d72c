import Foundation

/// Adds one member to a JSON object inside a message's text without writing the rest again: every other byte (key
/// order, numbers such as `1.50` or `1e3`, spacing) stays as the editor wrote it.
///
/// ``ACPRelay`` gives a prompt its `_meta.oa.idempotencyKey` so.
enum ACPRelaySplice {
    /// `text` (one JSON object) with `"key":value` (`value` is JSON text) added to the object at `path` (member names
    /// from the top), making the objects of `path` that are missing.
    ///
    /// `nil` when the text is not such an object, a member of `path` is not an object, or `key` is there already: the
    /// caller encodes the message instead.
    static func inserting(_ key: String, value: String, at path: [String], in text: String) -> String? {
        let bytes = Array(text.utf8)
        guard var open = skipSpace(bytes, 0), open < bytes.count, bytes[open] == UInt8(ascii: "{") else { return nil }
        var remaining = path[...]
        while let name = remaining.first {
            guard let member = memberValue(named: name, inObjectAt: open, bytes) else { break }
            guard member < bytes.count, bytes[member] == UInt8(ascii: "{") else { return nil }
            open = member
            remaining = remaining.dropFirst()
        }
        if remaining.isEmpty, memberValue(named: key, inObjectAt: open, bytes) != nil { return nil }
        // What goes in: the missing objects of the path, nested, around the new member.
        var inserted = "\(quoted(key)):\(value)"
        for name in remaining.reversed() {
            inserted = "\(quoted(name)):{\(inserted)}"
        }
        guard let first = skipSpace(bytes, open + 1), first < bytes.count else { return nil }
        if bytes[first] != UInt8(ascii: "}") { inserted += "," }
        var out = bytes
        out.insert(contentsOf: Array(inserted.utf8), at: open + 1)
        return String(decoding: out, as: UTF8.self)
    }

    /// A JSON string of `name` (member names here are plain ASCII).
    private static func quoted(_ name: String) -> String {
        var out = "\""
        for scalar in name.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// Where the value of the member `name` of the object whose `{` is at `open` starts, if it has one (compared as
    /// written: a name spelled with escapes is not found, and the caller then encodes the message).
    private static func memberValue(named name: String, inObjectAt open: Int, _ bytes: [UInt8]) -> Int? {
        let wanted = Array(name.utf8)
        guard var index = skipSpace(bytes, open + 1) else { return nil }
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") { return nil }
        while index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
            guard let keyEnd = stringEnd(bytes, index) else { return nil }
            let keyBytes = bytes[(index + 1)..<(keyEnd - 1)]
            guard let colon = skipSpace(bytes, keyEnd), colon < bytes.count, bytes[colon] == UInt8(ascii: ":"),
                  let value = skipSpace(bytes, colon + 1) else { return nil }
            if keyBytes.elementsEqual(wanted) { return value }
            guard let valueEnd = self.valueEnd(bytes, value), let next = skipSpace(bytes, valueEnd), next < bytes.count else { return nil }
            guard bytes[next] == UInt8(ascii: ",") else { return nil }
            guard let following = skipSpace(bytes, next + 1) else { return nil }
            index = following
        }
        return nil
    }

    private static func skipSpace(_ bytes: [UInt8], _ start: Int) -> Int? {
        var index = start
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == 0x0A || bytes[index] == 0x0D {
            index += 1
        }
        return index
    }

    /// The index after the closing quote of the string whose opening quote is at `start`.
    private static func stringEnd(_ bytes: [UInt8], _ start: Int) -> Int? {
        var index = start + 1
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\\"): index += 2
            case UInt8(ascii: "\""): return index + 1
            default: index += 1
            }
        }
        return nil
    }

    /// The index after the value that starts at `start`.
    private static func valueEnd(_ bytes: [UInt8], _ start: Int) -> Int? {
        guard start < bytes.count else { return nil }
        switch bytes[start] {
        case UInt8(ascii: "\""):
            return stringEnd(bytes, start)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            var index = start
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "\""):
                    guard let end = stringEnd(bytes, index) else { return nil }
                    index = end
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return index + 1 }
                default:
                    break
                }
                index += 1
            }
            return nil
        default:
            // A number, true, false or null: up to the next delimiter.
            var index = start
            while index < bytes.count, ![UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) {
                index += 1
            }
            return index
        }
    }
}
