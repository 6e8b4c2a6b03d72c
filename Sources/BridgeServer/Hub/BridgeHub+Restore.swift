import BridgeACP
import BridgeRPC
import BridgeWorkspace
import Logging

/// Restoring a dormant session (kept from before the bridge or the agent restarted) when a client attaches to it:
/// through the agent's `session/load` (or `session/resume`) when it advertises one, read-only otherwise (Protocol.md,
/// "Restored sessions").
extension BridgeHub {
    /// Restores `session` if it is dormant (waiting for a restore already under way); returns the error the client
    /// gets, if any (the agent could not be started, or the session was dropped meanwhile).
    func restoreIfDormant(_ session: String) async -> JSONRPCError? {
        guard sessions.state(of: session) == .dormant else { return nil }
        if let running = sessions.restoreUnderWay(session) { return await running.value }
        let task = Task { await self.restore(session) }
        sessions.setRestore(session, task)
        let error = await task.value
        sessions.setRestore(session, nil)
        return error
    }

    private func restore(_ session: String) async -> JSONRPCError? {
        let handle: AgentHandle
        switch await ensureAgent() {
        case .success(let running): handle = running
        case .failure(let error): return error
        }
        guard let record = sessions[session] else { return droppedError(session) ?? BridgeErrors.unknownSession(session) }
        guard record.state == .dormant else { return nil }
        let capabilities = handle.initializeResult["agentCapabilities"]
        let method: String
        if capabilities?["loadSession"] == .bool(true) {
            method = ACPMethod.sessionLoad
        } else if let resume = capabilities?["sessionCapabilities"]?["resume"], resume != .null, resume != .bool(false) {
            method = ACPMethod.sessionResume
        } else {
            if sessions.markReadOnly(session) {
                restoredReadOnly(session, because: "the agent advertises neither loadSession nor sessionCapabilities.resume")
            }
            return nil
        }
        var params: [String: JSONValue] = ["sessionId": .string(session), "cwd": .string(record.files.root), "mcpServers": []]
        if !record.additional.isEmpty { params["additionalDirectories"] = .array(record.additional.map { .string($0.root) }) }
        // The agent's history replay during a load is dropped (the session is dormant): the bridge replays its own.
        let response = await bridgeRequest(
            to: LaunchedAgent(agent: handle.agent, generation: handle.generation), method: method, params: .object(params),
            timeout: configuration.agentInitializeTimeout)
        // A load cut short by the shutdown says nothing about the agent: the session stays dormant (restored by the
        // next bridge), never read-only.
        let succeeded = if case .success = response.outcome { true } else { false }
        switch sessions.restoreAnswered(session, succeeded: succeeded, shuttingDown: shuttingDown) {
        case .gone:
            return droppedError(session) ?? BridgeErrors.unknownSession(session)
        case .unchanged:
            return nil
        case .stillDormant:
            return BridgeErrors.shuttingDown
        case .live:
            if case .success(let result) = response.outcome {
                keepState(of: session, from: result)
                keepAgentMeta(of: session, from: result)
            }
            persistSession(session)
            logger.info("restored a session in the agent", metadata: ["session": "\(session)", "method": "\(method)"])
        case .readOnly:
            let reason = if case .failure(let error) = response.outcome { String(error.message.prefix(200)) } else { "" }
            restoredReadOnly(session, because: "the agent refused \(method): \(reason)")
        }
        return nil
    }

    /// The agent cannot take the session back (it is read-only now): it stays readable, prompts are refused.
    private func restoredReadOnly(_ session: String, because reason: String) {
        persistSession(session)
        logger.notice("restored a session read-only", metadata: ["session": "\(session)", "reason": "\(reason)"])
    }

    /// The `_meta.oa` for an answer about `session`, when it is read-only.
    func restoreMeta(_ session: String) -> JSONValue? {
        sessions.state(of: session) == .readOnly ? SessionRestore.readOnlyMeta : nil
    }
}
