import CDNSSD
import Testing
@testable import BridgeDiscovery

/// The TXT record's wire form and parsing (RFC 6763 §6), checked against the rules and against the
/// dns_sd library's own `TXTRecord*` helpers (Avahi's compatibility library on Linux).
@Suite("TXT records", .tags(.unit))
struct TXTRecordTests {
    init() {
        // Before any TXTRecord* call, so Avahi's compatibility layer does not print its warning.
        DNSSDEnvironment.prepare()
    }

    /// `[len, bytes…]` for each string.
    static func wire(_ strings: String...) -> [UInt8] {
        strings.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) }
    }

    // MARK: - Encoding

    @Test("an empty record is one zero byte on the wire (RFC 6763 §6.1)")
    func emptyRecord() throws {
        #expect(TXTRecord().wireFormat == [0])
        #expect(try TXTRecord([:]).wireFormat == [0])
        #expect(try TXTRecord(wireFormat: [0]).entries.isEmpty)
        #expect(try TXTRecord(wireFormat: []).entries.isEmpty)
    }

    @Test("pairs encode as length-prefixed key=value strings, in order")
    func encodesInOrder() throws {
        let txt = try TXTRecord(["txtvers": "1", "proto": "0.2.2", "auth": "none"])
        #expect(txt.wireFormat == Self.wire("txtvers=1", "proto=0.2.2", "auth=none"))
        #expect(txt.strings.map { String(decoding: $0, as: UTF8.self) } == ["txtvers=1", "proto=0.2.2", "auth=none"])
    }

    @Test("a key without a value has no '='; an empty value keeps it")
    func booleanAndEmptyValues() throws {
        var txt = TXTRecord()
        try txt.set("paired", nil)
        try txt.set("path", "")
        #expect(txt.wireFormat == Self.wire("paired", "path="))
        #expect(txt["paired"] == "")
        #expect(txt["path"] == "")
        #expect(txt["absent"] == nil)
        let parsed = try TXTRecord(wireFormat: txt.wireFormat)
        #expect(parsed.entries == [TXTRecord.Entry(key: "paired", value: nil), TXTRecord.Entry(key: "path", value: "")])
    }

    @Test("encode then decode gives the same entries", arguments: [
        ["txtvers": "1"],
        ["txtvers": "1", "proto": "0.2.2,1.0", "id": "5f0c9a1e-7d2b-4c1e-9a43-2b8f3e1d0c77", "auth": "token", "path": "/ws"],
        ["name": "Büro-Rechner ☕", "x": "a=b=c", "sp": "  spaced  "],
    ] as [[String: String]])
    func roundTrip(pairs: [String: String]) throws {
        var txt = TXTRecord()
        for (key, value) in pairs.sorted(by: { $0.key < $1.key }) { try txt.set(key, value) }
        let decoded = try TXTRecord(wireFormat: txt.wireFormat)
        #expect(decoded == txt)
        #expect(decoded.dictionary == pairs)
        #expect(TXTRecord(strings: txt.strings) == txt)
    }

    // MARK: - Limits and validation

    @Test("one string holds at most 255 bytes")
    func lengthLimit() throws {
        var txt = TXTRecord()
        let fits = String(repeating: "v", count: 253)  // "k=" + 253 = 255
        try txt.set("k", fits)
        #expect(txt.wireFormat.first == 255)
        #expect(txt.wireFormat.count == 256)
        #expect(throws: DiscoveryError.self) { try txt.set("k", fits + "v") }
        // Multi-byte UTF-8 counts in bytes, not characters: "k=" + 127 × "é" is 256 bytes.
        #expect(throws: DiscoveryError.self) { try txt.set("k", String(repeating: "é", count: 127)) }
        #expect(txt["k"] == fits, "a rejected set must not change the record")
    }

    @Test("keys must be non-empty printable ASCII without '='", arguments: ["", "a=b", "tab\tkey", "ключ", "new\nline"])
    func invalidKeys(key: String) {
        var txt = TXTRecord()
        #expect(throws: DiscoveryError.self) { try txt.set(key, "v") }
        #expect(txt.entries.isEmpty)
    }

    @Test("a string running past the end of the record is an error")
    func truncated() {
        #expect(throws: DiscoveryError.self) { try TXTRecord(wireFormat: [9] + Array("txtvers".utf8)) }
        #expect(throws: DiscoveryError.self) { try TXTRecord(wireFormat: Self.wire("a=1") + [5, UInt8(ascii: "b")]) }
    }

    // MARK: - Decoding rules (RFC 6763 §6.3–6.4)

    @Test("a string starting with '=' has no key and is ignored; empty strings are skipped")
    func missingKeyIgnored() throws {
        let txt = try TXTRecord(wireFormat: Self.wire("=value", "", "a=1", "=", "b"))
        #expect(txt.entries == [TXTRecord.Entry(key: "a", value: "1"), TXTRecord.Entry(key: "b", value: nil)])
        #expect(TXTRecord(strings: [Array("=x".utf8), Array("c=3".utf8)]).dictionary == ["c": "3"])
    }

    @Test("a repeated key: the first occurrence wins, compared case-insensitively")
    func duplicateKeysFirstWins() throws {
        let txt = try TXTRecord(wireFormat: Self.wire("id=first", "ID=second", "Id", "auth=none", "auth=token"))
        #expect(txt.entries.count == 2)
        #expect(txt["id"] == "first")
        #expect(txt["auth"] == "none")
        #expect(txt.dictionary == ["id": "first", "auth": "none"])
    }

    @Test("only the first '=' separates key and value")
    func valueWithEquals() throws {
        let txt = try TXTRecord(wireFormat: Self.wire("q=a=b", "eq=="))
        #expect(txt["q"] == "a=b")
        #expect(txt["eq"] == "=")
    }

    @Test("keys are looked up and replaced case-insensitively, keeping their place")
    func caseInsensitive() throws {
        var txt = try TXTRecord(["Auth": "none", "path": "/"])
        #expect(txt["auth"] == "none")
        #expect(txt["AUTH"] == "none")
        try txt.set("AUTH", "token")
        #expect(txt.entries.count == 2)
        #expect(txt["auth"] == "token")
        #expect(txt.wireFormat == Self.wire("AUTH=token", "path=/"))
    }

    // MARK: - Against the dns_sd library

    /// Builds a record with `TXTRecordCreate` / `TXTRecordSetValue` and returns its bytes.
    static func libraryWire(_ entries: [(String, String?)]) throws -> [UInt8] {
        var ref = TXTRecordRef()
        TXTRecordCreate(&ref, 0, nil)
        defer { TXTRecordDeallocate(&ref) }
        for (key, value) in entries {
            let error: DNSServiceErrorType
            if let value {
                let bytes = Array(value.utf8)
                error = bytes.withUnsafeBytes { TXTRecordSetValue(&ref, key, UInt8(bytes.count), $0.baseAddress) }
            } else {
                error = TXTRecordSetValue(&ref, key, 0, nil)
            }
            try #require(error == 0, "TXTRecordSetValue(\(key)) returned \(error)")
        }
        let length = Int(TXTRecordGetLength(&ref))
        guard length > 0, let pointer = TXTRecordGetBytesPtr(&ref) else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: length))
    }

    @Test("our wire form matches TXTRecordSetValue's byte for byte", arguments: [
        [("txtvers", "1")],
        [("txtvers", "1"), ("proto", "0.2.2"), ("id", "5f0c9a1e"), ("auth", "none"), ("path", "/acp")],
        [("paired", nil), ("empty", ""), ("x", "a=b")],
        [("k", String(repeating: "v", count: 253))],
        [("name", "Büro ☕")],
    ] as [[(String, String?)]])
    func matchesLibrary(entries: [(String, String?)]) throws {
        var txt = TXTRecord()
        for (key, value) in entries { try txt.set(key, value) }
        #expect(txt.wireFormat == (try Self.libraryWire(entries)))
    }

    @Test("the library reads our wire form back: count, keys and values")
    func libraryReadsOurs() throws {
        var txt = try TXTRecord(["txtvers": "1", "auth": "token", "path": "/ws"])
        try txt.set("paired", nil)
        let bytes = txt.wireFormat
        try bytes.withUnsafeBytes { raw in
            let size = UInt16(raw.count)
            #expect(TXTRecordGetCount(size, raw.baseAddress) == 4)
            for (key, expected) in [("txtvers", "1"), ("auth", "token"), ("path", "/ws")] {
                var length: UInt8 = 0
                let value = try #require(TXTRecordGetValuePtr(size, raw.baseAddress, key, &length))
                #expect(String(decoding: UnsafeRawBufferPointer(start: value, count: Int(length)), as: UTF8.self) == expected)
            }
            #expect(TXTRecordContainsKey(size, raw.baseAddress, "paired") == 1)
            #expect(TXTRecordContainsKey(size, raw.baseAddress, "missing") == 0)
        }
    }

    @Test("an empty record: the library builds zero bytes, we send the one zero byte RFC 6763 asks for")
    func emptyAgainstLibrary() throws {
        #expect(try Self.libraryWire([]) == [])
        #expect(TXTRecord().wireFormat == [0])
        // Both read back as "no attributes".
        #expect(try TXTRecord(wireFormat: try Self.libraryWire([])).entries.isEmpty)
        #expect(try TXTRecord(wireFormat: TXTRecord().wireFormat).entries.isEmpty)
    }
}
