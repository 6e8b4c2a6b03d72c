/// What a relay needs of a session notification (`{"jsonrpc":"2.0","method":M,"params":{"sessionId":…,"update":
/// {"sessionUpdate":…,…},…}}`), read by a validating scan of its bytes without making its params.
public struct ScannedUpdate: Sendable, Hashable {
    /// `params.sessionId`.
    public let sessionID: String
    /// `params.update.sessionUpdate`.
    public let kind: String
}

/// A validating scan of one JSON-RPC notification line that builds no values: it accepts only what
/// ``JSONParser`` accepts and what ``JSONRPCFrame/init(parsingUTF8:)`` reads as a notification of the expected method
/// whose params is an object with a string `sessionId`, no `_meta`, and an object `update` with a string
/// `sessionUpdate`, with no key repeated in any object.
///
/// Anything else, and anything it is not sure of (a key with an escape or a non-ASCII byte, whose equality with
/// another is Unicode's, an object of very many members), it leaves to the full parse.
struct NotificationScanner {
    /// Where a member is, which decides what is read of it.
    private enum Place {
        case top, params, update, other
    }

    private let bytes: UnsafeBufferPointer<UInt8>
    private let method: UnsafeBufferPointer<UInt8>
    private var index = 0
    private var depth = 0
    /// The keys of the objects being read, innermost last (to find a repeated key without making strings).
    private var keys: [Range<Int>] = []
    /// Objects with more members than this are left to the full parse (the repeated-key check compares pairs).
    private static let maxScannedMembers = 32

    private var sawVersion = false
    private var sawMethod = false
    private var params: Range<Int>?
    private var sessionID: Range<Int>?
    private var kind: Range<Int>?

    private init(bytes: UnsafeBufferPointer<UInt8>, method: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
        self.method = method
        keys.reserveCapacity(16)
    }

    /// The params span and what was read of it, or `nil` when the line is not such a notification (or not surely).
    static func scan(_ line: UnsafeBufferPointer<UInt8>, method: UnsafeBufferPointer<UInt8>) -> (params: Range<Int>, update: ScannedUpdate)? {
        var scanner = NotificationScanner(bytes: line, method: method)
        scanner.skipWhitespace()
        guard scanner.index < line.count, line[scanner.index] == UInt8(ascii: "{"), scanner.object(.top) else { return nil }
        scanner.skipWhitespace()
        guard scanner.index == line.count, scanner.sawVersion, scanner.sawMethod, let params = scanner.params,
              let session = scanner.sessionID, let kind = scanner.kind else { return nil }
        return (params, ScannedUpdate(sessionID: scanner.text(session), kind: scanner.text(kind)))
    }

    private func text(_ range: Range<Int>) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    /// Any value.
    private mutating func value() -> Bool {
        guard index < bytes.count else { return false }
        switch bytes[index] {
        case UInt8(ascii: "{"): return object(.other)
        case UInt8(ascii: "["): return array()
        case UInt8(ascii: "\""): return string() != nil
        case UInt8(ascii: "t"): return literal("true")
        case UInt8(ascii: "f"): return literal("false")
        case UInt8(ascii: "n"): return literal("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return number()
        default: return false
        }
    }

    private mutating func literal(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count,
              UnsafeBufferPointer(rebasing: bytes[index..<(index + count)]).elementsEqual(UnsafeBufferPointer(start: word.utf8Start, count: count))
        else { return false }
        index += count
        return true
    }

    private mutating func enter() -> Bool {
        depth += 1
        return depth <= JSONParser.maxDepth
    }

    /// An object at `index` (its `{`), reading the members that matter in `place`.
    private mutating func object(_ place: Place) -> Bool {
        guard enter() else { return false }
        defer { depth -= 1 }
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return true
        }
        let mark = keys.count
        defer { keys.removeSubrange(mark...) }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\""), let key = plainString() else { return false }
            // ASCII keys without escapes: equal bytes are equal strings, and no other pair is.
            guard keys.count - mark < NotificationScanner.maxScannedMembers, isASCII(key) else { return false }
            for earlier in keys[mark...] where same(earlier, key) { return false }
            keys.append(key)
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return false }
            index += 1
            skipWhitespace()
            guard index < bytes.count, member(key, in: place) else { return false }
            skipWhitespace()
            guard index < bytes.count else { return false }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "}") {
                index += 1
                return true
            } else {
                return false
            }
        }
    }

    /// The value of member `key` of an object in `place`, at `index`.
    private mutating func member(_ key: Range<Int>, in place: Place) -> Bool {
        switch place {
        case .top:
            if named(key, "jsonrpc") {
                guard let version = plainStringValue(), named(version, "2.0") else { return false }
                sawVersion = true
                return true
            }
            if named(key, "method") {
                guard let name = plainStringValue(), UnsafeBufferPointer(rebasing: bytes[name]).elementsEqual(method) else { return false }
                sawMethod = true
                return true
            }
            if named(key, "params") {
                guard bytes[index] == UInt8(ascii: "{") else { return false }
                let start = index
                guard object(.params) else { return false }
                params = start..<index
                return true
            }
            // A request or a response is read by the full parse.
            if named(key, "id") || named(key, "result") || named(key, "error") { return false }
        case .params:
            // `_meta` is merged with the stamp by the full path.
            if named(key, "_meta") { return false }
            if named(key, "sessionId") {
                guard let session = plainStringValue() else { return false }
                sessionID = session
                return true
            }
            if named(key, "update") {
                guard bytes[index] == UInt8(ascii: "{") else { return false }
                return object(.update)
            }
        case .update:
            if named(key, "sessionUpdate") {
                guard let update = plainStringValue() else { return false }
                kind = update
                return true
            }
        case .other:
            break
        }
        return value()
    }

    private mutating func array() -> Bool {
        guard enter() else { return false }
        defer { depth -= 1 }
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return true
        }
        while true {
            skipWhitespace()
            guard value() else { return false }
            skipWhitespace()
            guard index < bytes.count else { return false }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return true
            } else {
                return false
            }
        }
    }

    /// A number as ``JSONParser`` reads it (RFC 8259's grammar).
    private mutating func number() -> Bool {
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { return false }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, isDigit(bytes[index]) { return false }
        } else {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { return false }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { return false }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        return true
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private func isASCII(_ range: Range<Int>) -> Bool {
        !bytes[range].contains { $0 >= 0x80 }
    }

    private func same(_ lhs: Range<Int>, _ rhs: Range<Int>) -> Bool {
        lhs.count == rhs.count && UnsafeBufferPointer(rebasing: bytes[lhs]).elementsEqual(UnsafeBufferPointer(rebasing: bytes[rhs]))
    }

    private func named(_ range: Range<Int>, _ name: StaticString) -> Bool {
        range.count == name.utf8CodeUnitCount
            && UnsafeBufferPointer(rebasing: bytes[range]).elementsEqual(UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
    }

    /// A string value without escapes at `index` (its contents), `nil` if it is not one.
    private mutating func plainStringValue() -> Range<Int>? {
        guard bytes[index] == UInt8(ascii: "\"") else { return nil }
        return plainString()
    }

    /// The string at `index` (its `"`) if it has no escape: its contents; `nil` for any other, or an invalid one.
    private mutating func plainString() -> Range<Int>? {
        let start = index + 1
        guard let end = string(), !bytes[start..<end].contains(UInt8(ascii: "\\")) else { return nil }
        return start..<end
    }

    /// A string as ``JSONParser`` reads it (escapes and surrogate pairs checked), at `index` (its `"`): where its
    /// contents end (its closing `"`), `nil` if it is invalid.
    private mutating func string() -> Int? {
        index += 1
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return index - 1
            }
            if byte < 0x20 { return nil }
            if byte == UInt8(ascii: "\\") {
                index += 1
                guard index < bytes.count else { return nil }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                     UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    continue
                case UInt8(ascii: "u"):
                    guard let unit = hex4() else { return nil }
                    if (0xD800...0xDBFF).contains(unit) {
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else { return nil }
                        index += 2
                        guard let low = hex4(), (0xDC00...0xDFFF).contains(low) else { return nil }
                    } else if (0xDC00...0xDFFF).contains(unit) {
                        return nil  // a lone low surrogate
                    }
                    continue
                default:
                    return nil
                }
            }
            index += 1
        }
        return nil
    }

    private mutating func hex4() -> UInt16? {
        guard index + 4 <= bytes.count else { return nil }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt16
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt16(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt16(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt16(byte - UInt8(ascii: "A") + 10)
            default: return nil
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }
}
