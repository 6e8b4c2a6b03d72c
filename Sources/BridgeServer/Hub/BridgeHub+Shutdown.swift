import BridgeACP
import BridgeRPC
import BridgeTime
import Logging

/// Graceful shutdown: clients are told first, prompts get a grace period, then the agent stops.
extension BridgeHub {
    /// Close reason sent with 1001 to every client on graceful shutdown.
    static let shuttingDownReason = "bridge shutting down"

    /// Closes every client with 1001 "bridge shutting down" (and any that still connects).
    ///
    /// Prompts keep running.
    func beginShutdown() {
        guard !shuttingDown else { return }
        shuttingDown = true
        logger.notice("shutting down: closing client connections", metadata: [
            "clients": "\(connections.count)", "prompts": "\(routes.promptSessions.count)",
        ])
        for id in connections.ids { send(.close(.goingAway, BridgeHub.shuttingDownReason), to: id) }
        // What waits on the bridge's own requests to the agent (an `initialize` of an agent being restarted, a
        // restore's `session/load`) ends now: a client's reader stuck behind it would keep serve from stopping within
        // 2 s (issue 25 item 1, finding F5). No new agent is started from here on (``ensureAgent()``).
        for (agentID, route) in routes.removeAll(where: { $0.isBridge }) {
            guard case .bridge(let continuation, _) = route else { continue }
            continuation.resume(returning: JSONRPCResponse(id: .int(agentID), error: BridgeErrors.shuttingDown))
        }
    }

    /// Waits until every client has gone after ``beginShutdown()`` (each was sent 1001 and answers it), bounded by
    /// `limit` of real time and by cancellation: the HTTP server's own shutdown comes after that.
    ///
    /// The connection table tells when it empties (``ConnectionTable/untilEmpty()``): nothing looks again every
    /// few milliseconds.
    func waitForClientsToLeave(within limit: Duration) async {
        let emptied = connections.untilEmpty()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await _ in emptied {}
            }
            group.addTask { try? await ContinuousClock().sleep(for: limit) }
            _ = await group.next()
            group.cancelAll()
        }
    }

    /// Waits up to ``BridgeServerConfiguration/shutdownGracePeriod`` for prompts in flight to end, then cancels the
    /// rest (`session/cancel`, pending permissions answered `cancelled`) and waits up to one more second for them.
    func finishPrompts() async {
        guard !Task.isCancelled, !routes.promptSessions.isEmpty else { return }
        let grace = configuration.shutdownGracePeriod
        logger.notice("waiting for prompts in flight", metadata: ["prompts": "\(routes.promptSessions.count)", "grace": "\(grace.words)"])
        await waitForPrompts(until: configuration.clock.now + grace)
        let left = routes.promptSessions
        guard !left.isEmpty, !Task.isCancelled, case .running(let handle) = agentLink.state else { return }
        logger.notice("cancelling prompts still running after the grace period", metadata: ["prompts": "\(left.count)"])
        for session in left.sorted() {
            if let error = cancelTurn(session, params: nil, agent: handle) {
                logger.warning("could not cancel a prompt", metadata: ["session": "\(session)", "error": "\(error.message)"])
            }
        }
        await waitForPrompts(until: configuration.clock.now + .seconds(1))
    }

    /// Polls (every 20 ms on the configuration's clock, bounded by `deadline` and cancellation) until no prompt is
    /// running.
    private func waitForPrompts(until deadline: ContinuousClock.Instant) async {
        let clock = configuration.clock
        while !routes.promptSessions.isEmpty, clock.now < deadline, !Task.isCancelled {
            try? await clock.sleep(until: min(clock.now + .milliseconds(20), deadline), tolerance: nil)
        }
    }
}
