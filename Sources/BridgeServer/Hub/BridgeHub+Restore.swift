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
        guard sessions[session]?.state == .dormant else { return nil }
        if let running = restoring[session] { return await running.value }
        let task = Task { await self.restore(session) }
        restoring[session] = task
        let error = await task.value
        restoring[session] = nil
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
            markReadOnly(session, because: "the agent advertises neither loadSession nor sessionCapabilities.resume")
            return nil
        }
        var params: [String: JSONValue] = ["sessionId": .string(session), "cwd": .string(record.files.root), "mcpServers": []]
        if !record.additional.isEmpty { params["additionalDirectories"] = .array(record.additional.map { .string($0.root) }) }
        // The agent's history replay during a load is dropped (the session is dormant): the bridge replays its own.
        let response = await bridgeRequest(
            to: LaunchedAgent(agent: handle.agent, generation: handle.generation), method: method, params: .object(params),
            timeout: configuration.agentInitializeTimeout)
        guard sessions[session]?.state == .dormant else {
            return sessions[session] == nil ? droppedError(session) ?? BridgeErrors.unknownSession(session) : nil
        }
        // A load cut short by the shutdown says nothing about the agent: the session stays dormant (restored by the
        // next bridge), never read-only.
        if shuttingDown { return BridgeErrors.shuttingDown }
        switch response.outcome {
        case .success(let result):
            sessions[session]?.state = .live
            keepState(of: session, from: result)
            keepAgentMeta(of: session, from: result)
            persistSession(session)
            logger.info("restored a session in the agent", metadata: ["session": "\(session)", "method": "\(method)"])
        case .failure(let error):
            markReadOnly(session, because: "the agent refused \(method): \(error.message.prefix(200))")
        }
        return nil
    }

    /// The agent cannot take the session back: it stays readable, prompts are refused.
    private func markReadOnly(_ session: String, because reason: String) {
        sessions[session]?.state = .readOnly
        persistSession(session)
        logger.notice("restored a session read-only", metadata: ["session": "\(session)", "reason": "\(reason)"])
    }

    /// The `_meta.oa` for an answer about `session`, when it is read-only.
    func restoreMeta(_ session: String) -> JSONValue? {
        sessions[session]?.state == .readOnly ? SessionRestore.readOnlyMeta : nil
    }

    /// The agent is gone: its sessions wait to be restored by the next agent (the clients were detached).
    func makeSessionsDormant() {
        for session in Array(sessions.keys) {
            sessions[session]?.members.removeAll()
            if sessions[session]?.state == .live { sessions[session]?.state = .dormant }
        }
    }
}
