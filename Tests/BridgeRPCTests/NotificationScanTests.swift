import Testing
@testable import BridgeRPC

/// The validating scan of an agent's `session/update` line (``JSONRPCNotification/init(scanning:method:)``): it
/// accepts only what the full parse reads as such a notification, and then says what the full parse says.
@Suite("Scanning session/update lines without parsing their params", .tags(.unit))
struct NotificationScanTests {
    static let method = "session/update"
    static let good = #"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a \"b\" \/ \u00e9 \ud83d\ude00 é","n":[1,-0.5,2e10,true,false,null,{}]}}}}"#

    private func scan(_ text: String) -> JSONRPCNotification? {
        JSONRPCNotification(scanning: Array(text.utf8), method: Self.method)
    }

    private func parsed(_ bytes: [UInt8]) -> JSONRPCNotification? {
        guard case .single(.message(.notification(let notification))) = JSONRPCFrame(parsingUTF8: bytes) else { return nil }
        return notification
    }

    private func rawText(_ notification: JSONRPCNotification?) -> String? {
        notification?.rawParams?.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    @Test("a plain update is scanned: session, kind, the params' bytes, and params parsed when read equal the full parse")
    func scanned() throws {
        let scanned = try #require(scan(Self.good))
        let full = try #require(parsed(Array(Self.good.utf8)))
        #expect(scanned.scannedUpdate == ScannedUpdate(sessionID: "s1", kind: "agent_message_chunk"))
        #expect(scanned.method == Self.method)
        #expect(rawText(scanned) == rawText(full))
        #expect(scanned.rawParams?.isForwardable == true)
        #expect(scanned.params == full.params)
        #expect(scanned == full)
        // Whitespace everywhere, members in any order.
        let spaced = #" { "params" : { "update" : { "x" : 1 , "sessionUpdate" : "tool_call" } , "sessionId" : "s 2" } , "method" : "session/update" , "jsonrpc" : "2.0" } "#
        #expect(scan(spaced)?.scannedUpdate == ScannedUpdate(sessionID: "s 2", kind: "tool_call"))
        #expect(scan(spaced)?.params == parsed(Array(spaced.utf8))?.params)
    }

    @Test("changing the params of a scanned update forgets its bytes and scan")
    func changed() throws {
        var scanned = try #require(scan(Self.good))
        scanned.params = ["sessionId": "other"]
        #expect(scanned.rawParams == nil)
        #expect(scanned.scannedUpdate == nil)
        #expect(scanned.params == ["sessionId": "other"])
    }

    @Test("left to the full parse: _meta, repeated or unusual keys, other messages, other shapes, invalid JSON",
          arguments: [
              // `_meta` is merged by the full path.
              #"{"jsonrpc":"2.0","method":"session/update","params":{"_meta":{},"sessionId":"s","update":{"sessionUpdate":"k"}}}"#,
              // Repeated keys, at any depth.
              #"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","sessionId":"t","update":{"sessionUpdate":"k"}}}"#,
              #"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"k","c":{"a":1,"a":2}}}}"#,
              #"{"jsonrpc":"2.0","jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"k"}}}"#,
              // Keys with escapes or non-ASCII bytes (equal as strings to other spellings).
              #"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"k","\u0061":1,"a":2}}}"#,
              #"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"k","é":1}}}"#,
              // Escapes in what is read.
              #"{"jsonrpc":"2.0","method":"session\/update","params":{"sessionId":"s","update":{"sessionUpdate":"k"}}}"#,
              #"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s\n","update":{"sessionUpdate":"k"}}}"#,
              // Other messages, methods, versions.
              #"{"jsonrpc":"2.0","id":1,"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"k"}}}"#,
              #"{"jsonrpc":"2.0","method":"session/other","params":{"sessionId":"s","update":{"sessionUpdate":"k"}}}"#,
              #"{"jsonrpc":"1.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"k"}}}"#,
              #"{"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"k"}}}"#,
              #"{"jsonrpc":"2.0","method":"session/update","result":1,"params":{"sessionId":"s","update":{"sessionUpdate":"k"}}}"#,
              #"[{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"k"}}}]"#,
              // Other shapes of params.
              #"{"jsonrpc":"2.0","method":"session/update","params":[1]}"#,
              #"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":1,"update":{"sessionUpdate":"k"}}}"#,
              #"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":[]}}"#,
              #"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"kind":"k"}}}"#,
              #"{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"k"}}}"#,
              // Invalid JSON.
              #"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"k","n":01}}}"#,
              #"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"k","t":"\x"}}}"#,
              #"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"k","t":"\udc00"}}}"#,
              #"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"k","t":"\ud800x"}}}"#,
              #"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"k"}}} x"#,
              #"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"k",}}}"#,
              #"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"k","t":tru}}}"#,
          ])
    func fallsBack(_ line: String) {
        #expect(scan(line) == nil)
    }

    @Test("a control character in a string and nesting past the parser's limit are left to the full parse")
    func controlAndDepth() {
        #expect(scan(#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s"# + "\u{01}" + #"","update":{"sessionUpdate":"k"}}}"#) == nil)
        let deep = String(repeating: "[", count: JSONParser.maxDepth) + String(repeating: "]", count: JSONParser.maxDepth)
        #expect(scan(#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"k","d":"# + deep + "}}}") == nil)
    }

    @Test("whatever the scan accepts of damaged lines, the full parse reads as the same notification")
    func agreesWithTheParser() {
        let line = Array(Self.good.utf8)
        var variants: [[UInt8]] = []
        for cut in 0..<line.count { variants.append(Array(line[..<cut]) + line[(cut + 1)...]) }  // one byte dropped
        for position in 0..<line.count {
            for byte: UInt8 in [UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "{"), UInt8(ascii: "}"), UInt8(ascii: ","),
                                UInt8(ascii: ":"), UInt8(ascii: "0"), UInt8(ascii: "a"), 0x20, 0x01, 0xFF] {
                var changed = line
                changed[position] = byte
                variants.append(changed)
            }
        }
        var accepted = 0
        for variant in variants {
            guard let scanned = JSONRPCNotification(scanning: variant, method: Self.method) else { continue }
            accepted += 1
            guard let full = parsed(variant) else {
                Issue.record("scanned but not a notification: \(String(decoding: variant, as: UTF8.self))")
                continue
            }
            #expect(full.params == scanned.params)
            #expect(full.params?["sessionId"]?.stringValue == scanned.scannedUpdate?.sessionID)
            #expect(full.params?["update"]?["sessionUpdate"]?.stringValue == scanned.scannedUpdate?.kind)
            #expect(full.params?["_meta"] == nil)
            #expect(rawText(full) == rawText(scanned))
            #expect(full.rawParams?.isForwardable == scanned.rawParams?.isForwardable)
        }
        // Some damage leaves a valid update (a changed letter of the text): those were compared.
        #expect(accepted > 50)
    }
}
