import BridgeRPC
import Testing

/// One row of the malformed-input table: the frame, and the errors (code and id, in order) it must be answered with.
struct MalformedCase: Sendable, CustomTestStringConvertible {
    var name: String
    var text: String
    var expected: [(code: Int, id: JSONRPCID)]
    var testDescription: String { name }
}

@Suite("JSON-RPC frames", .tags(.unit))
struct JSONRPCFrameTests {
    static let malformed: [MalformedCase] = [
        MalformedCase(name: "bad JSON", text: #"{"jsonrpc":"2.0","method":"foo","params":"bar","baz]"#, expected: [(-32700, .null)]),
        MalformedCase(name: "empty text", text: "", expected: [(-32700, .null)]),
        MalformedCase(name: "not an object", text: "42", expected: [(-32600, .null)]),
        MalformedCase(name: "wrong version", text: #"{"jsonrpc":"1.0","method":"x","id":7}"#, expected: [(-32600, .int(7))]),
        MalformedCase(name: "missing version", text: #"{"method":"x","id":"a"}"#, expected: [(-32600, .string("a"))]),
        MalformedCase(name: "version as number", text: #"{"jsonrpc":2.0,"method":"x","id":1}"#, expected: [(-32600, .int(1))]),
        MalformedCase(name: "missing method", text: #"{"jsonrpc":"2.0","id":3}"#, expected: [(-32600, .int(3))]),
        MalformedCase(name: "method not a string", text: #"{"jsonrpc":"2.0","method":1,"params":"bar"}"#, expected: [(-32600, .null)]),
        MalformedCase(name: "id of a bad type", text: #"{"jsonrpc":"2.0","method":"x","id":{"a":1}}"#, expected: [(-32600, .null)]),
        MalformedCase(name: "id boolean", text: #"{"jsonrpc":"2.0","method":"x","id":true}"#, expected: [(-32600, .null)]),
        MalformedCase(name: "params a string", text: #"{"jsonrpc":"2.0","method":"x","id":"p","params":"bar"}"#, expected: [(-32600, .string("p"))]),
        MalformedCase(name: "empty batch", text: "[]", expected: [(-32600, .null)]),
        MalformedCase(name: "batch of junk", text: "[1,2,3]", expected: [(-32600, .null), (-32600, .null), (-32600, .null)]),
        MalformedCase(name: "invalid batch JSON", text: #"[{"jsonrpc":"2.0","method":"sum","params":[1,2,4],"id":"1"},{"jsonrpc":"2.0","method""#, expected: [(-32700, .null)]),
        MalformedCase(name: "response with both result and error", text: #"{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"x"}}"#, expected: [(-32600, .int(1))]),
        MalformedCase(name: "error object malformed", text: #"{"jsonrpc":"2.0","id":1,"error":"boom"}"#, expected: [(-32600, .int(1))]),
    ]

    @Test("malformed input gets the right error codes and ids", arguments: malformed)
    func malformedInput(row: MalformedCase) {
        let frame = JSONRPCFrame(parsing: row.text)
        let elements: [JSONRPCFrame.Element]
        switch frame {
        case .single(let element): elements = [element]
        case .batch(let batch): elements = batch
        }
        let got = elements.compactMap { element -> (Int, JSONRPCID)? in
            if case .invalid(let id, let error) = element { return (error.code, id) }
            return nil
        }
        #expect(got.count == row.expected.count)
        for (actual, expected) in zip(got, row.expected) {
            #expect(actual.0 == expected.code)
            #expect(actual.1 == expected.id)
        }
        for element in elements {
            if case .invalid(_, let error) = element { #expect(!error.message.isEmpty) }
        }
    }

    @Test("a batch mixing good and bad judges each element on its own")
    func mixedBatch() {
        let text = #"[{"jsonrpc":"2.0","method":"sum","params":[1,2,4],"id":"1"},{"jsonrpc":"2.0","method":"notify_hello","params":[7]},{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":"2"},{"foo":"boo"},{"jsonrpc":"2.0","method":"foo.get","params":{"name":"myself"},"id":"5"},{"jsonrpc":"2.0","method":"get_data","id":"9"}]"#
        guard case .batch(let elements) = JSONRPCFrame(parsing: text) else {
            Issue.record("expected a batch")
            return
        }
        #expect(elements.count == 6)
        #expect(elements[0] == .message(.request(JSONRPCRequest(id: .string("1"), method: "sum", params: [1, 2, 4]))))
        #expect(elements[1] == .message(.notification(JSONRPCNotification(method: "notify_hello", params: [7]))))
        if case .invalid(let id, let error) = elements[3] {
            #expect(id == .null)
            #expect(error.code == -32600)
        } else {
            Issue.record("element 3 should be invalid")
        }
        let responses = elements.compactMap(\.errorResponse)
        #expect(responses.count == 1)
    }

    @Test("ids of each type are echoed with the same JSON type", arguments: [
        (#""abc""#, #""abc""#), ("1", "1"), ("-7", "-7"), ("1.5", "1.5"), ("null", "null"), (#""1""#, #""1""#),
    ])
    func idsEchoed(id: String, echoed: String) throws {
        let text = #"{"jsonrpc":"2.0","method":"m","id":"# + id + "}"
        guard case .single(.message(.request(let request))) = JSONRPCFrame(parsing: text) else {
            Issue.record("expected a request")
            return
        }
        let response = JSONRPCMessage.response(JSONRPCResponse(id: request.id, result: .object([:])))
        #expect(response.jsonText == #"{"jsonrpc":"2.0","id":"# + echoed + #","result":{}}"#)
    }

    @Test("notifications are notifications (no id), requests with a null id are requests")
    func notifications() {
        #expect(JSONRPCFrame(parsing: #"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#)
            == .single(.message(.notification(JSONRPCNotification(method: "session/cancel", params: ["sessionId": "s"])))))
        #expect(JSONRPCFrame(parsing: #"{"jsonrpc":"2.0","method":"m","id":null}"#)
            == .single(.message(.request(JSONRPCRequest(id: .null, method: "m")))))
    }

    @Test("responses, success and error, are read back")
    func responses() {
        #expect(JSONRPCFrame(parsing: #"{"jsonrpc":"2.0","id":4,"result":{"ok":true}}"#)
            == .single(.message(.response(JSONRPCResponse(id: .int(4), result: ["ok": true])))))
        #expect(JSONRPCFrame(parsing: #"{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"nope","data":[1]}}"#)
            == .single(.message(.response(JSONRPCResponse(id: .string("x"), error: JSONRPCError(code: -32601, message: "nope", data: [1]))))))
    }

    @Test("serialization is compact and puts the envelope first")
    func serialization() {
        let request = JSONRPCMessage.request(JSONRPCRequest(id: .string("1"), method: "initialize", params: ["b": 1, "a": "x y"]))
        #expect(request.jsonText == #"{"jsonrpc":"2.0","id":"1","method":"initialize","params":{"a":"x y","b":1}}"#)
        let error = JSONRPCMessage.response(JSONRPCResponse(id: .int(2), error: .methodNotFound("nope")))
        #expect(error.jsonText == #"{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"data":{"method":"nope"},"message":"Method not found: nope"}}"#)
        #expect(JSONRPCMessage.batchText([error, error]).hasPrefix("[{"))
        let notification = JSONRPCMessage.notification(JSONRPCNotification(method: "x"))
        #expect(notification.jsonText == #"{"jsonrpc":"2.0","method":"x"}"#)
    }

    @Test("parse error carries the offset in data")
    func parseErrorData() {
        guard case .single(.invalid(_, let error)) = JSONRPCFrame(parsing: "{\"a\" 1}") else {
            Issue.record("expected an invalid element")
            return
        }
        #expect(error.code == -32700)
        #expect(error.data?["offset"] == .int(5))
    }
}
