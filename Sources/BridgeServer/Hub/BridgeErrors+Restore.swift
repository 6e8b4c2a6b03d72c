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

    /// -32002 for a request about a session kept from before a restart by a client not attached to it (the same code
    /// as an unknown session, so clients attach again with `session/load` or `_oa/session/resume`, which restores it).
    static func notRunning(_ session: String) -> JSONRPCError {
        JSONRPCError(
            code: resourceNotFoundCode,
            message: "Session \(session) is not running since the bridge or the agent restarted; attach again with session/load or _oa/session/resume",
            data: ["sessionId": .string(session), "restorable": true])
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
