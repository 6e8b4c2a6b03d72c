import BridgeRPC

extension BridgeErrors {
    /// -32011 for `session/prompt` on a session restored read-only.
    static let readOnlyCode = -32011

    /// `session/prompt` on a session the agent could not load after it restarted.
    static func readOnly(_ session: String) -> JSONRPCError {
        JSONRPCError(
            code: readOnlyCode, message: "session is read-only: the agent restarted and cannot load it",
            data: ["sessionId": .string(session), "reason": .string(SessionRestore.agentRestarted)])
    }

    /// The stored outcome of a prompt that ran when the bridge stopped: nobody knows how it ended, and it is not run
    /// again.
    static func interrupted(_ session: String) -> JSONRPCError {
        JSONRPCError.internalError(
            "the bridge restarted while this prompt ran; its outcome is unknown and it was not sent again",
            data: ["sessionId": .string(session), "reason": "bridge_restarted"])
    }
}

/// The words of the restored-session format (Protocol.md, "Restored sessions").
enum SessionRestore {
    /// `_meta.oa.readOnly.reason` of a session restored read-only.
    static let agentRestarted = "agent_restarted"

    /// The `_meta.oa` an answer about a read-only session carries.
    static var readOnlyMeta: JSONValue { ["readOnly": ["reason": .string(agentRestarted)]] }
}
