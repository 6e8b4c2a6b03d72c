import BridgeACP
import BridgeRPC
import Testing

@Suite("Dialects", .tags(.unit))
struct DialectTests {
    @Test("seed initialize is recognised and its version echoed", arguments: ["0.2.2", "0.2.0", "0.2.15", "0.2"])
    func seedVersions(version: String) throws {
        let dialect = try ACPDialect.negotiate(initializeParams: ["protocol_version": .string(version), "client_capabilities": [:]])
        #expect(dialect == .seed(version: version))
    }

    @Test("other seed versions are refused with the versions served", arguments: ["0.3.0", "1.0", "0.2.x", "0.2.2-beta", ""])
    func refusedVersions(version: String) {
        do {
            _ = try ACPDialect.negotiate(initializeParams: ["protocol_version": .string(version)])
            Issue.record("\(version) should be refused")
        } catch {
            #expect(error.code == -32602)
            #expect(error.message.contains("0.2.x"))
            #expect(error.message.contains("1"))
            #expect(error.data == ACPDialect.served)
        }
    }

    @Test("official initialize is ACP v1; wrong types are refused")
    func official() throws {
        #expect(try ACPDialect.negotiate(initializeParams: ["protocolVersion": 1]) == .v1)
        #expect(try ACPDialect.negotiate(initializeParams: ["protocolVersion": 2]) == .v1)
        #expect(throws: JSONRPCError.self) { try ACPDialect.negotiate(initializeParams: ["protocolVersion": "1"]) }
        #expect(throws: JSONRPCError.self) { try ACPDialect.negotiate(initializeParams: ["protocol_version": 1]) }
        #expect(throws: JSONRPCError.self) { try ACPDialect.negotiate(initializeParams: [:]) }
        #expect(throws: JSONRPCError.self) { try ACPDialect.negotiate(initializeParams: nil) }
    }

    @Test("key spelling converts both ways", arguments: [
        ("session_id", "sessionId"), ("tool_call_id", "toolCallId"), ("stop_reason", "stopReason"),
        ("read_text_file", "readTextFile"), ("cwd", "cwd"), ("_meta", "_meta"), ("mcp_servers", "mcpServers"),
    ])
    func keys(snake: String, camel: String) {
        #expect(ACPKeyCase.camelCase(snake) == camel)
        #expect(ACPKeyCase.snakeCase(camel) == snake)
    }

    @Test("session/update payloads convert recursively, values and free-form maps untouched")
    func sessionUpdate() {
        let official: JSONValue = [
            "sessionId": "s1",
            "update": [
                "sessionUpdate": "tool_call",
                "toolCallId": "call_1",
                "rawInput": ["filePath": "/a", "some_key": 1],
                "content": [["type": "diff", "oldText": "a", "newText": "b", "path": "/x"]],
                "_meta": ["vendorKey": ["innerKey": true]],
            ],
        ]
        let seed = ACPDialect.seed(version: "0.2.2")
        let converted = seed.toClient(official)
        #expect(converted == [
            "session_id": "s1",
            "update": [
                "session_update": "tool_call",
                "tool_call_id": "call_1",
                "raw_input": ["filePath": "/a", "some_key": 1],
                "content": [["type": "diff", "old_text": "a", "new_text": "b", "path": "/x"]],
                "_meta": ["vendorKey": ["innerKey": true]],
            ],
        ])
        #expect(seed.toAgent(converted) == official)
        #expect(ACPDialect.v1.toClient(official) == official)
    }

    @Test("env maps of MCP servers keep their keys")
    func environment() {
        let seed: JSONValue = ["cwd": "/w", "mcp_servers": [["name": "x", "command": "c", "args": [], "env": ["MY_TOKEN_NAME": "v"]]]]
        let official = ACPDialect.seed(version: "0.2.2").toAgent(seed)
        #expect(official["mcpServers"]?.arrayValue?.first?["env"] == ["MY_TOKEN_NAME": "v"])
    }
}
