package import BridgeRPC

/// What a terminal has to tell the hub: new output for the session's phones (`_oa/terminal/output`) and, once the
/// command has ended and its output is read, the exit status and the agent's `terminal/wait_for_exit` requests to
/// answer with it.
package struct TerminalUpdate: Sendable {
    /// The session the terminal belongs to.
    package let session: String
    /// The terminal's id.
    let terminalID: String
    /// Output since the previous update (whole characters).
    let output: String
    /// Output bytes left out since the previous update (more than ``TerminalSettings/maxNotificationBytes`` came within
    /// one interval).
    let skippedBytes: Int
    /// How the command ended: set in the last update only.
    package let exitStatus: TerminalExitStatus?
    /// `terminal/wait_for_exit` requests waiting for the end: in the last update only.
    package let waiters: [TerminalWaiter]

    /// The params of `_oa/terminal/output` (official spelling): `sessionId`, `terminalId`, `output`, and
    /// `skippedBytes` / `exitStatus` when there are some.
    package var notificationParams: JSONValue {
        var params: [String: JSONValue] = [
            "sessionId": .string(session), "terminalId": .string(terminalID), "output": .string(output),
        ]
        if skippedBytes > 0 { params["skippedBytes"] = .int(Int64(skippedBytes)) }
        if let exitStatus { params["exitStatus"] = exitStatus.jsonValue }
        return .object(params)
    }
}

/// An agent's `terminal/wait_for_exit` waiting for the command to end.
package struct TerminalWaiter: Sendable {
    /// The id the agent used.
    package let agentRequestID: JSONRPCID
    /// The agent that asked (a replaced agent's answer is dropped).
    package let generation: Int

    /// The request `agentRequestID` of the agent of `generation`.
    package init(agentRequestID: JSONRPCID, generation: Int) {
        self.agentRequestID = agentRequestID
        self.generation = generation
    }
}
