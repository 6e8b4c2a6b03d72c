import BridgeRPC
import Testing

@Suite("JSONValue")
struct JSONValueTests {
    @Test("integers and doubles keep their type through a round trip")
    func numbersKeepTheirType() throws {
        let value = try JSONValue(parsing: #"{"a":1,"b":1.0,"c":-0.5,"d":1e3,"e":9223372036854775807,"f":9223372036854775808}"#)
        #expect(value["a"] == .int(1))
        #expect(value["b"] == .double(1.0))
        #expect(value["c"] == .double(-0.5))
        #expect(value["d"] == .double(1000))
        #expect(value["e"] == .int(Int64.max))
        #expect(value["f"] == .double(9223372036854775808.0))
        let again = try JSONValue(parsing: value.jsonText)
        #expect(again == value)
        #expect(JSONValue.double(1.0).jsonText == "1.0")
        #expect(JSONValue.int(1).jsonText == "1")
    }

    @Test("strings with escapes, surrogate pairs and control characters round trip")
    func strings() throws {
        let value = try JSONValue(parsing: #""a\"b\\c\/d\n\t\u00e9\ud83d\ude00""#)
        #expect(value == .string("a\"b\\c/d\n\té😀"))
        #expect(JSONValue.string("x\u{01}y\"").jsonText == #""x\u0001y\"""#)
        #expect(try JSONValue(parsing: JSONValue.string("ünï\u{7}").jsonText) == .string("ünï\u{7}"))
    }

    @Test("compact output with sorted keys")
    func compact() throws {
        let value: JSONValue = ["b": [1, 2.5, nil, true], "a": ["x": "y"]]
        #expect(value.jsonText == #"{"a":{"x":"y"},"b":[1,2.5,null,true]}"#)
    }

    @Test("invalid JSON is refused with a position", arguments: [
        "", "{", "[1,]", "{\"a\":}", "01", "1.", "tru", "\"abc", "{'a':1}", "[1] x", "\"\u{01}\"", "\"\\x\"", "\"\\ud800\"", "-", "NaN",
    ])
    func invalid(text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: text) }
    }

    @Test("absurd nesting is refused, not a crash")
    func deepNesting() {
        let text = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: text) }
    }

    @Test("Codable round trip through JSONEncoder and JSONDecoder")
    func codable() throws {
        let value: JSONValue = ["a": [1, "two", nil, false], "b": ["c": 2.5]]
        let data = try JSONEncoder().encode(value)
        #expect(try JSONDecoder().decode(JSONValue.self, from: data) == value)
    }
}

import Foundation
