import BridgeRPC
import Testing

@Suite("Bytes in and out (the relay's path)", .tags(.unit))
struct ByteEncodingTests {
    @Test("parsing UTF-8 bytes gives what parsing the same text gives, valid or not", arguments: [
        #"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"text":"é\n😀"}}}"#,
        #"[{"jsonrpc":"2.0","id":1,"result":null},{"jsonrpc":"2.0","id":"x","error":{"code":-1,"message":"m"}}]"#,
        #"{"jsonrpc":"2.0","id":1,"method":"m","params":3}"#, "{", "[]", #""\ud800""#, "",
    ])
    func parsingBytes(text: String) {
        #expect(JSONRPCFrame(parsingUTF8: Array(text.utf8)) == JSONRPCFrame(parsing: text))
    }

    @Test("jsonUTF8 is jsonText's bytes, escapes included")
    func encodedBytes() throws {
        let params: JSONValue = [
            "sessionId": "s", "text": .string("quote \" backslash \\ tab \t nul \u{0} bell \u{7} esc \u{1B} del \u{7F} é 😀"),
            "n": [1, -2, 2.5, nil, true, false], "_meta": ["seq": 7],
        ]
        let message = JSONRPCMessage.notification(JSONRPCNotification(method: "session/update", params: params))
        #expect(message.jsonUTF8 == Array(message.jsonText.utf8))
        #expect(try JSONRPCMessage(parsing: message.jsonText) == message)
        #expect(message.jsonText.contains(#"nul \u0000 bell \u0007 esc \u001b del \#u{7F} é 😀"#))
    }

    @Test("every control character is escaped, the usual ones by name")
    func controlCharacters() {
        for scalar in 0..<0x20 {
            let text = JSONValue.string(String(Character(Unicode.Scalar(UInt8(scalar))))).jsonText
            let named: [Int: String] = [0x08: #"\b"#, 0x09: #"\t"#, 0x0A: #"\n"#, 0x0C: #"\f"#, 0x0D: #"\r"#]
            let hex = String(scalar, radix: 16)
            let expected = named[scalar] ?? "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            #expect(text == "\"" + expected + "\"")
        }
    }
}
