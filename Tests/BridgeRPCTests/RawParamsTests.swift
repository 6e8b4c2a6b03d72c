import Testing
@testable import BridgeRPC

@Suite("The agent's bytes of params, kept beside the parsed value", .tags(.unit))
struct RawParamsTests {
    private func notification(_ bytes: [UInt8]) -> JSONRPCNotification? {
        guard case .single(.message(.notification(let notification))) = JSONRPCFrame(parsingUTF8: bytes) else { return nil }
        return notification
    }

    private func rawText(_ notification: JSONRPCNotification?) -> String? {
        notification?.rawParams?.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    @Test("a notification parsed from bytes keeps its params' bytes exactly, whitespace and escapes included")
    func keptExactly() throws {
        let params = #"{ "update" : {"text":"a\/b \u00e9"} ,"sessionId":"s" }"#
        let line = #"{"jsonrpc":"2.0","method":"session/update","params":"# + params + " }"
        let parsed = try #require(notification(Array(line.utf8)))
        #expect(rawText(parsed) == params)
        #expect(parsed.rawParams?.count == params.utf8.count)
        #expect(parsed.rawParams?.isForwardable == true)
        #expect(parsed.params?["update"]?["text"] == "a/b é")
    }

    @Test("no bytes for params that are not an object, for requests, batches, text, or once params change")
    func notKept() throws {
        #expect(notification(Array(#"{"jsonrpc":"2.0","method":"m","params":[1]}"#.utf8))?.rawParams == nil)
        #expect(notification(Array(#"{"jsonrpc":"2.0","method":"m"}"#.utf8))?.rawParams == nil)
        // A nested `params` key is not the message's.
        #expect(notification(Array(#"{"jsonrpc":"2.0","method":"m","x":{"params":{}}}"#.utf8))?.rawParams == nil)
        guard case .single(.message(.request(let request))) = JSONRPCFrame(parsingUTF8: Array(#"{"jsonrpc":"2.0","id":1,"method":"m","params":{}}"#.utf8)) else {
            Issue.record("not a request")
            return
        }
        #expect(request.params == [:])
        guard case .batch(let elements) = JSONRPCFrame(parsingUTF8: Array(#"[{"jsonrpc":"2.0","method":"m","params":{}}]"#.utf8)),
              case .message(.notification(let inBatch)) = elements.first else {
            Issue.record("not a batch of a notification")
            return
        }
        #expect(inBatch.rawParams == nil)
        guard case .single(.message(.notification(let fromText))) = JSONRPCFrame(parsing: #"{"jsonrpc":"2.0","method":"m","params":{}}"#) else {
            Issue.record("not a notification")
            return
        }
        #expect(fromText.rawParams == nil)
        var changed = try #require(notification(Array(#"{"jsonrpc":"2.0","method":"m","params":{"a":1}}"#.utf8)))
        #expect(changed.rawParams != nil)
        changed.params = ["a": 2]
        #expect(changed.rawParams == nil)
    }

    @Test("bytes that say more than the parsed value are not forwardable: a repeated key, invalid UTF-8")
    func notForwardable() throws {
        let repeated = try #require(notification(Array(#"{"jsonrpc":"2.0","method":"m","params":{"a":{"b":1,"b":2}}}"#.utf8)))
        #expect(repeated.rawParams?.isForwardable == false)
        var invalid = Array(#"{"jsonrpc":"2.0","method":"m","params":{"a":"x"}}"#.utf8)
        invalid[invalid.count - 4] = 0xFF
        let repaired = try #require(notification(invalid))
        #expect(repaired.params?["a"] == "\u{FFFD}")
        #expect(repaired.rawParams?.isForwardable == false)
        // Equality ignores the bytes.
        #expect(repeated == JSONRPCNotification(method: "m", params: ["a": ["b": 2]]))
    }

    @Test("UTF-8 validation: well-formed text in, overlong forms, surrogates, truncation and stray bytes out")
    func utf8() {
        func valid(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBufferPointer { UTF8Check.isValid($0) } }
        #expect(valid([]))
        #expect(valid(Array("plain ascii text, longer than eight bytes".utf8)))
        #expect(valid(Array("é ü 中文 😀 at the end of a long run of ASCII text: 😀".utf8)))
        #expect(valid([0xF4, 0x8F, 0xBF, 0xBF]))  // U+10FFFF
        #expect(!valid([0xC0, 0xAF]))  // overlong '/'
        #expect(!valid([0xE0, 0x80, 0xAF]))  // overlong
        #expect(!valid([0xED, 0xA0, 0x80]))  // U+D800
        #expect(!valid([0xF4, 0x90, 0x80, 0x80]))  // past U+10FFFF
        #expect(!valid(Array("abcdefgh".utf8) + [0xE2, 0x82]))  // truncated
        #expect(!valid([0x80]))
        #expect(!valid(Array("12345678".utf8) + [0xC3, 0x28]))  // bad continuation
        #expect(!valid([0xF5, 0x80, 0x80, 0x80]))
    }
}
