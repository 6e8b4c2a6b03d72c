import BridgeRPC
import Testing

/// Issue 16: every JSON number used as an id comes back byte for byte (an id of 123456789012345678901234567890
/// came back as 1.2345678901234568e+29).
@Suite("Exact JSON-RPC ids", .tags(.unit))
struct ExactIDTests {
    static let ids = [
        "123456789012345678901234567890", "-123456789012345678901234567890", "9223372036854775808",
        "-9223372036854775809", "9223372036854775807", "-9223372036854775808", "18446744073709551616",
        "1.50", "1e3", "1E+2", "-0", "0.1", "2.5e-7", "12345678901234567890.123456789",
        "1" + String(repeating: "0", count: 400), "1e400", "0", "7",
    ]

    @Test("a request id is echoed exactly in the response", arguments: ids)
    func requestIDRoundTrips(id: String) throws {
        guard case .single(.message(.request(let request))) = JSONRPCFrame(parsing: #"{"jsonrpc":"2.0","id":\#(id),"method":"m"}"#) else {
            Issue.record("not read as a request")
            return
        }
        let response = JSONRPCMessage.response(JSONRPCResponse(id: request.id, result: .null))
        #expect(response.jsonText == #"{"jsonrpc":"2.0","id":\#(id),"result":null}"#)
        #expect(request.id.description == id)
    }

    @Test("an invalid request's id is echoed exactly in its error", arguments: ids)
    func errorIDRoundTrips(id: String) {
        guard case .single(.invalid(let echoed, _)) = JSONRPCFrame(parsing: #"{"jsonrpc":"1.0","id":\#(id),"method":"m"}"#) else {
            Issue.record("not read as invalid")
            return
        }
        #expect(echoed.description == id)
    }

    @Test("big numbers inside params pass through unchanged")
    func paramsPassThrough() throws {
        let text = #"{"a":[123456789012345678901234567890,1.10,-0,1e2],"b":{"c":0.30000000000000004}}"#
        #expect(try JSONValue(parsing: text).jsonText == text)
    }

    @Test("ids that differ in the digits past Double's precision stay different")
    func distinctBigIDs() throws {
        let first = JSONRPCID(try JSONValue(parsing: "123456789012345678901234567890"))
        let second = JSONRPCID(try JSONValue(parsing: "123456789012345678901234567891"))
        #expect(first != nil && first != second)
    }

    @Test("ordinary integers stay on the Int64 fast path")
    func ordinaryIntegers() throws {
        #expect(try JSONValue(parsing: "42") == .int(42))
        #expect(try JSONValue(parsing: "-42") == .int(-42))
        #expect(JSONRPCID(try JSONValue(parsing: "17")) == .int(17))
    }
}
