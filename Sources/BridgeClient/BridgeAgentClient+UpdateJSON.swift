public import BridgeRPC

extension BridgeAgentClient.Update {
    /// The update as one JSON object with its sequence number, as `oa-bridge connect --json` prints it:
    /// `{"sessionUpdate": "agent_message_chunk" | "agent_thought_chunk", "seq", "text"}`,
    /// `{"sessionUpdate": "tool_call", "seq", "toolCallId", "title", "status"}` (and `"detail"` when the call has content text), or for any other kind
    /// `{"sessionUpdate": KIND, "seq", "update": PAYLOAD}`.
    public func jsonObject(sequence: Int) -> JSONValue {
        let seq = JSONValue.int(Int64(sequence))
        switch self {
        case .messageChunk(let text):
            return ["sessionUpdate": "agent_message_chunk", "seq": seq, "text": .string(text)]
        case .thoughtChunk(let text):
            return ["sessionUpdate": "agent_thought_chunk", "seq": seq, "text": .string(text)]
        case .toolCall(let id, let title, let status, let detail):
            var members: [String: JSONValue] = [
                "sessionUpdate": "tool_call", "seq": seq, "toolCallId": .string(id), "title": .string(title), "status": .string(status),
            ]
            if let detail { members["detail"] = .string(detail) }
            return .object(members)
        case .other(let kind, let payload):
            return ["sessionUpdate": .string(kind), "seq": seq, "update": payload]
        }
    }
}
