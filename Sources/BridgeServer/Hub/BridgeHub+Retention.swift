import BridgeACP
import BridgePairing
import BridgeRPC
import BridgeTerminal
import BridgeTime
import Logging
import Metrics

/// Bounded retention (see ``SessionRetention``): idle sessions are dropped, the longest idle first, past the bounds
/// in count, replay bytes and idle time; what a connection that went away leaves behind is released.
extension BridgeHub {
    /// A connection went away (called by `disconnect` once it is detached from its sessions and its asks): the
    /// sessions it leaves idle start their idle time now, and its requests whose answer nobody can receive any more
    /// (every one but `session/prompt`, which outlives its client) are released and the agent is told with
    /// `$/cancel_request`.
    ///
    /// Then the bounds are enforced.
    func connectionLeft(_ id: ConnectionID, _ client: ClientRecord) {
        if client.pending > 0 { releaseRequests(of: id) }
        guard !client.sessions.isEmpty else { return }
        for session in client.sessions { sessions.resetIdle(session) }
        enforceRetention()
    }

    /// Drops the routes of requests of connection `id` (gone) that only it could receive the answer of.
    private func releaseRequests(of id: ConnectionID) {
        let released = routes.removeAll { route in
            guard case .client(let client) = route else { return false }
            return client.connection == id && client.method != ACPMethod.sessionPrompt
        }
        guard !released.isEmpty else { return }
        let agent: AgentHandle? = if case .running(let handle) = agentLink.state { handle } else { nil }
        for (agentID, route) in released {
            guard let agent, agent.generation == route.generation else { continue }
            try? agent.agent.send(.notification(JSONRPCNotification(method: ACPMethod.cancelRequest, params: ["requestId": .int(agentID)])))
        }
        logger.debug("released the requests of a client that went away", metadata: ["connection": "\(id)", "requests": "\(released.count)"])
    }

    /// Notes which sessions are idle and since when, then drops idle sessions, the longest idle first: those idle for
    /// ``SessionRetention/idleTimeout``, then as many as it takes to be within ``SessionRetention/maxIdleSessions``
    /// and ``SessionRetention/maxIdleReplayBytes``.
    ///
    /// Runs on the orphaned-request sweep, when a connection goes away and when a prompt ends while its client is
    /// gone. Returns when the longest idle session left reaches the idle timeout (`nil`: none can), and moves the
    /// sweep's timer to then.
    @discardableResult
    func enforceRetention() -> ContinuousClock.Instant? {
        guard !sessions.isEmpty else { return nil }
        let pruned = sessions.prune(at: configuration.clock.now, retention: configuration.retention, busy: routes.promptSessions)
        for retired in pruned.retired { retire(retired) }
        guard let due = pruned.nextDue else { return nil }
        orphanSweep.schedule(at: due)
        return due
    }

    /// What follows from dropping an idle session (the table forgot its record, replay buffer and early updates, and
    /// remembers it as dropped): its stored rows, its terminals and the agent's requests still waiting on it go (a
    /// permission answered `cancelled`, anything else an error); the agent gets `session/close` if it advertises
    /// `sessionCapabilities.close`; a later resume gets ``BridgeErrors/sessionDropped(_:reason:retention:)``.
    private func retire(_ retired: SessionTable.Retired) {
        let (session, record, reason, idleFor) = (retired.session, retired.record, retired.reason, retired.idleFor)
        forgetStored(session)
        terminals.releaseAll(session: session)
        for member in record.members { connections[member]?.sessions.remove(session) }
        for (_, ask) in asks.removeAll(where: { $0.sessionID == session }) {
            answerUnaskable(ask, reason: "session \(session) was dropped for retention")
        }
        // A dormant or read-only session is not the running agent's: nothing to close there.
        let closing = record.state == .live && closeInAgent(session)
        logger.notice("dropped an idle session", metadata: [
            "session": "\(session)", "reason": "\(reason.rawValue)", "idle": "\(idleFor.words)",
            "replayBytes": "\(record.replay.byteCount)", "closeSent": "\(closing)",
        ])
        BridgeMetrics.sessions.record(sessions.count)
    }

    /// Sends `session/close` for `session` to the running agent if it advertises `sessionCapabilities.close`; returns
    /// whether it was sent.
    ///
    /// Nobody waits for the answer (see ``retentionCloseAnswered(_:outcome:)``).
    private func closeInAgent(_ session: String) -> Bool {
        guard case .running(let handle) = agentLink.state, BridgeHub.canClose(handle.initializeResult) else { return false }
        // An agent that never answers session/close leaves at most `maxUnansweredCloses` routes behind.
        let unanswered = routes.ids { $0.isRetention }
        if unanswered.count >= BridgeHub.maxUnansweredCloses, let oldest = unanswered.first {
            _ = routes.remove(oldest)
            logger.notice("the agent has not answered session/close for dropped sessions; forgetting the oldest", metadata: [
                "waiting": "\(unanswered.count)", "limit": "\(BridgeHub.maxUnansweredCloses)",
            ])
        }
        let agentID = routes.add(.retention(session: session, generation: handle.generation))
        do {
            try handle.agent.send(.request(JSONRPCRequest(id: .int(agentID), method: ACPMethod.sessionClose, params: ["sessionId": .string(session)])))
            return true
        } catch {
            _ = routes.remove(agentID)
            logger.notice("could not send session/close for a dropped session", metadata: ["session": "\(session)", "error": "\(error.description)"])
            return false
        }
    }

    /// Whether an agent's `initialize` result advertises `agentCapabilities.sessionCapabilities.close`.
    static func canClose(_ initializeResult: JSONValue) -> Bool {
        guard let close = initializeResult["agentCapabilities"]?["sessionCapabilities"]?["close"] else { return false }
        return close != .null && close != .bool(false)
    }

    /// The agent answered the `session/close` of a dropped session.
    func retentionCloseAnswered(_ session: String, outcome: Result<JSONValue, JSONRPCError>) {
        switch outcome {
        case .success:
            logger.debug("the agent closed a dropped session", metadata: ["session": "\(session)"])
        case .failure(let error):
            logger.notice("the agent refused session/close for a dropped session", metadata: ["session": "\(session)", "error": "\(error.message)"])
        }
    }

    /// The most `session/close` requests of dropped sessions kept waiting for the agent's answer; past it the oldest
    /// is forgotten (its answer, if it ever comes, is logged as unknown).
    static let maxUnansweredCloses = 64

    /// How often the token store's long-expired rows are deleted (see ``purgeExpiredTokens()``).
    static let tokenPurgeInterval: Duration = .seconds(3600)

    /// With auth on: deletes the token rows that expired more than a week ago (``TokenStore/purgeExpiredTokens(olderThan:)``),
    /// so `pairing.sqlite` does not grow by two rows with every refresh for as long as the bridge runs.
    nonisolated func purgeExpiredTokens() async {
        guard let store = configuration.authenticator?.store else { return }
        do {
            let purged = try await store.purgeExpiredTokens()
            if purged > 0 { logger.info("purged expired tokens", metadata: ["rows": "\(purged)"]) }
        } catch {
            logger.notice("could not purge expired tokens", metadata: ["error": "\(error)"])
        }
    }

    /// The error for a resume of `session` if it was dropped for retention, else `nil`.
    func droppedError(_ session: String) -> JSONRPCError? {
        sessions.droppedReason(session).map { BridgeErrors.sessionDropped(session, reason: $0, retention: configuration.retention) }
    }
}
