import BridgeRPC
import Foundation
import Testing

@Suite("JSONValue", .tags(.unit))
struct JSONValueTests {
    @Test("64-bit integers are .int, every other number keeps its text through a round trip")
    func numbersKeepTheirType() throws {
        let text = #"{"a":1,"b":1.0,"c":-0.5,"d":1e3,"e":9223372036854775807,"f":9223372036854775808,"g":-9223372036854775808,"h":-0}"#
        let value = try JSONValue(parsing: text)
        #expect(value["a"] == .int(1))
        #expect(value["b"] == .number(JSONNumber("1.0")!))
        #expect(value["b"]?.doubleValue == 1.0)
        #expect(value["c"]?.doubleValue == -0.5)
        #expect(value["d"] == .number(JSONNumber("1e3")!))
        #expect(value["d"]?.intValue == 1000)
        #expect(value["e"] == .int(Int64.max))
        #expect(value["f"] == .number(JSONNumber("9223372036854775808")!))
        #expect(value["f"]?.intValue == nil)
        #expect(value["g"] == .int(Int64.min))
        #expect(value["h"] == .number(JSONNumber("-0")!))
        #expect(value.jsonText == text)
        let again = try JSONValue(parsing: value.jsonText)
        #expect(again == value)
        #expect(JSONValue.double(1.0).jsonText == "1.0")
        #expect(JSONValue.int(1).jsonText == "1")
    }

    @Test("JSONNumber accepts exactly the JSON number grammar", arguments: [
        ("0", true), ("-0", true), ("1.50", true), ("1e3", true), ("1E+30", true), ("-2.5e-7", true),
        ("123456789012345678901234567890", true), ("", false), ("01", false), ("1.", false), (".5", false),
        ("+1", false), ("1e", false), (" 1", false), ("1 ", false), ("1}", false), ("NaN", false), ("-", false),
    ])
    func numberGrammar(text: String, valid: Bool) {
        #expect((JSONNumber(text) != nil) == valid)
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
