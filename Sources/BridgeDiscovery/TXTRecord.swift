/// A DNS-SD TXT record: an ordered list of `key=value` strings (RFC 6763 §6).
///
/// Keys are printable US-ASCII without `=`, compared case-insensitively, at most 9 characters
/// recommended; each `key=value` string is at most 255 bytes. Values are bytes; this type keeps
/// them as UTF-8 text since every key the bridge uses is text.
public struct TXTRecord: Sendable, Hashable {
    /// One attribute: a key with an optional value (`nil` means a key present without `=`).
    public struct Entry: Sendable, Hashable {
        /// The key, as given.
        public var key: String
        /// The value; `nil` for a boolean attribute with no `=`.
        public var value: String?
    }

    /// The attributes in order.
    public private(set) var entries: [Entry] = []

    /// Creates an empty record.
    public init() {}

    /// Creates a record from pairs, in the order given.
    public init(_ pairs: KeyValuePairs<String, String>) throws(DiscoveryError) {
        for (key, value) in pairs { try set(key, value) }
    }

    /// Sets `key` to `value`, replacing an existing key case-insensitively.
    public mutating func set(_ key: String, _ value: String?) throws(DiscoveryError) {
        try TXTRecord.validate(key: key, value: value)
        let entry = Entry(key: key, value: value)
        if let index = entries.firstIndex(where: { $0.key.lowercased() == key.lowercased() }) {
            entries[index] = entry
        } else {
            entries.append(entry)
        }
    }

    /// The value of `key` (case-insensitive); `""` for a key without a value, `nil` if absent.
    public subscript(key: String) -> String? {
        guard let entry = entries.first(where: { $0.key.lowercased() == key.lowercased() }) else { return nil }
        return entry.value ?? ""
    }

    /// The record as a dictionary; the first occurrence of a key wins, as RFC 6763 §6.4 says.
    public var dictionary: [String: String] {
        var result: [String: String] = [:]
        for entry in entries where result[entry.key] == nil {
            result[entry.key] = entry.value ?? ""
        }
        return result
    }

    /// The wire form: each string prefixed by its length; an empty record is one zero byte.
    public var wireFormat: [UInt8] {
        guard !entries.isEmpty else { return [0] }
        var bytes: [UInt8] = []
        for string in strings {
            bytes.append(UInt8(string.count))
            bytes.append(contentsOf: string)
        }
        return bytes
    }

    /// Each attribute as its `key=value` bytes, as Avahi's string lists want them.
    public var strings: [[UInt8]] {
        entries.map { entry in
            var bytes = Array(entry.key.utf8)
            if let value = entry.value {
                bytes.append(UInt8(ascii: "="))
                bytes.append(contentsOf: value.utf8)
            }
            return bytes
        }
    }

    /// Parses the wire form.
    ///
    /// Empty strings are skipped; a later duplicate key is ignored.
    public init(wireFormat bytes: [UInt8]) throws(DiscoveryError) {
        var index = 0
        var seen = Set<String>()
        while index < bytes.count {
            let length = Int(bytes[index])
            index += 1
            guard index + length <= bytes.count else {
                throw .invalidTXT("a string of \(length) bytes runs past the end of the record (\(bytes.count) bytes)")
            }
            let string = Array(bytes[index..<index + length])
            index += length
            guard let entry = TXTRecord.parse(string) else { continue }
            if seen.insert(entry.key.lowercased()).inserted { entries.append(entry) }
        }
    }

    /// Parses `key=value` strings (as Avahi hands them over).
    public init(strings: [[UInt8]]) {
        var seen = Set<String>()
        for string in strings {
            guard let entry = TXTRecord.parse(string) else { continue }
            if seen.insert(entry.key.lowercased()).inserted { entries.append(entry) }
        }
    }

    private static func parse(_ string: [UInt8]) -> Entry? {
        guard !string.isEmpty else { return nil }
        let separator = string.firstIndex(of: UInt8(ascii: "="))
        let keyBytes = separator.map { string[..<$0] } ?? string[...]
        guard !keyBytes.isEmpty else { return nil }  // "=value" has no key: RFC 6763 says ignore it
        // RFC 6763 §6.4: keys are printable US-ASCII; anything else is not a key we can use.
        guard keyBytes.allSatisfy({ $0 >= 0x20 && $0 <= 0x7E }) else { return nil }
        let key = String(decoding: keyBytes, as: UTF8.self)
        let value = separator.map { String(decoding: string[($0 + 1)...], as: UTF8.self) }
        // Invalid UTF-8 in a value becomes U+FFFD, which may not fit back into one TXT string:
        // such an entry cannot be represented faithfully, so it is left out.
        guard key.utf8.count + (value.map { $0.utf8.count + 1 } ?? 0) <= 255 else { return nil }
        return Entry(key: key, value: value)
    }

    private static func validate(key: String, value: String?) throws(DiscoveryError) {
        guard !key.isEmpty else { throw .invalidTXT("a key must not be empty") }
        guard key.utf8.allSatisfy({ $0 >= 0x20 && $0 <= 0x7E && $0 != UInt8(ascii: "=") }) else {
            throw .invalidTXT("key '\(key)' must be printable ASCII without '='")
        }
        let length = key.utf8.count + (value.map { $0.utf8.count + 1 } ?? 0)
        guard length <= 255 else {
            throw .invalidTXT("'\(key)=…' is \(length) bytes; one TXT string holds at most 255")
        }
    }
}
