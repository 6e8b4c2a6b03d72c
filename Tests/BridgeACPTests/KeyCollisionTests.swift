import BridgeACP
import BridgeRPC
import Testing

@Suite("Seed dialect: keys that collide after conversion", .tags(.unit))
struct KeyCollisionTests {
    private let seed = ACPDialect.seed(version: "0.2.2")

    /// What `body` threw, or `nil`.
    private func collision(_ body: () throws(ACPKeyCollision) -> JSONValue) -> ACPKeyCollision? {
        do throws(ACPKeyCollision) {
            _ = try body()
            return nil
        } catch {
            return error
        }
    }

    @Test("agent to phone: fooBar and foo_bar in one object of a session/update are an error naming both")
    func agentToPhone() {
        let update: JSONValue = [
            "sessionId": "s", "_meta": ["seq": 4],
            "update": ["sessionUpdate": "agent_message_chunk", "content": ["type": "text", "text": "x", "fooBar": 1, "foo_bar": 2]],
        ]
        #expect(collision { () throws(ACPKeyCollision) in try seed.checkedToClient(update) } == ACPKeyCollision(key: "foo_bar", sources: ["fooBar", "foo_bar"]))
        // The same keys deeper, in an array.
        let nested: JSONValue = ["sessionId": "s", "update": ["entries": [["ok": 1], ["someKey": 1, "some_key": 2]]]]
        #expect(collision { () throws(ACPKeyCollision) in try seed.checkedToClient(nested) }?.sources == ["someKey", "some_key"])
        // An official client gets the value as it is: nothing to convert, nothing collides.
        #expect(collision { () throws(ACPKeyCollision) in try ACPDialect.v1.checkedToClient(update) } == nil)
    }

    @Test("phone to agent: session_id and sessionId in one request are an error, -32602 naming the keys")
    func phoneToAgent() {
        let params: JSONValue = ["session_id": "a", "sessionId": "b", "prompt": []]
        let found = collision { () throws(ACPKeyCollision) in try seed.checkedToAgent(params) }
        #expect(found == ACPKeyCollision(key: "sessionId", sources: ["sessionId", "session_id"]))
        let error = found?.rpcError(fromClient: true)
        #expect(error?.code == -32602)
        #expect(error?.data?["key"] == "sessionId")
        #expect(error?.data?["sources"] == ["sessionId", "session_id"])
        // What the agent sent is the bridge's problem to report, not the phone's: -32603.
        #expect(found?.rpcError(fromClient: false).code == -32603)
    }

    @Test("free-form data may hold both spellings: _meta, rawInput, env, requestedSchema, kept members")
    func freeFormNeverCollides() {
        let update: JSONValue = [
            "sessionId": "s", "_meta": ["fooBar": 1, "foo_bar": 2],
            "update": ["sessionUpdate": "tool_call", "toolCallId": "c", "rawInput": ["fooBar": 1, "foo_bar": 2]],
        ]
        #expect(collision { () throws(ACPKeyCollision) in try seed.checkedToClient(update) } == nil)
        let server: JSONValue = ["mcp_servers": [["name": "m", "command": "c", "args": [], "env": ["A_B": "1", "aB": "2"]]]]
        #expect(collision { () throws(ACPKeyCollision) in try seed.checkedToAgent(server) } == nil)
        let answer: JSONValue = ["action": "accept", "content": ["branchName": "x", "branch_name": "y"]]
        #expect(collision { () throws(ACPKeyCollision) in try seed.checkedToAgent(answer, keeping: ["content"]) } == nil)
        #expect(collision { () throws(ACPKeyCollision) in try seed.checkedToAgent(answer) } != nil)
    }

    @Test("keys that only look alike do not collide")
    func noFalseAlarm() {
        let value: JSONValue = ["toolCallId": "a", "tool_call": "b", "sessionUpdate": "x", "_session_id": 1, "session_id_x": 2]
        #expect(collision { () throws(ACPKeyCollision) in try seed.checkedToClient(value) } == nil)
    }
}
