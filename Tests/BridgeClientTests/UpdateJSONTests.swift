import BridgeClient
import BridgeRPC
import Testing

@Suite("Updates as connect --json prints them", .tags(.unit))
struct UpdateJSONTests {
    @Test("each kind of update with its sequence number")
    func shapes() {
        #expect(BridgeAgentClient.Update.messageChunk("hi").jsonObject(sequence: 3)
            == ["sessionUpdate": "agent_message_chunk", "seq": 3, "text": "hi"])
        #expect(BridgeAgentClient.Update.thoughtChunk("hmm").jsonObject(sequence: 4)
            == ["sessionUpdate": "agent_thought_chunk", "seq": 4, "text": "hmm"])
        #expect(BridgeAgentClient.Update.toolCall(id: "t1", title: "Read", status: "pending").jsonObject(sequence: 5)
            == ["sessionUpdate": "tool_call", "seq": 5, "toolCallId": "t1", "title": "Read", "status": "pending"])
        #expect(BridgeAgentClient.Update.other(kind: "plan", payload: ["entries": []]).jsonObject(sequence: 6)
            == ["sessionUpdate": "plan", "seq": 6, "update": ["entries": []]])
    }
}
