import BridgeACP
import BridgePairing
import BridgeRPC
import BridgeTime
import Foundation
import Logging

/// The hub's two sweeps, each run by a ``SweepTimer`` on the configuration's clock: they run when something can be
/// due, and an idle bridge (no client behind, no agent request waiting, no idle session with a time limit) sleeps
/// until the timer's backstop.
extension BridgeHub {
    /// Until cancelled: cuts off the clients that are stuck between frames too (see ``OutboundQueue/isStuck``), when
    /// one can be (a client's queue announces it with ``OutboundQueue/stuckDeadline``), and closes the connections of
    /// paired devices whose access token expired (4001), when one does (the connection announces it with
    /// ``tokenExpiresAt(_:)``): no task per connection sleeps until then.
    nonisolated func sweepStuckClients() async {
        await stuckSweep.run { await self.sweepConnections() }
    }

    /// Cuts off the stuck clients and closes those whose token expired; returns when the next one can be due.
    private func sweepConnections() -> ContinuousClock.Instant? {
        var next: ContinuousClock.Instant?
        for client in connections.clients {
            if client.outbound.isStuck {
                cutOff(client)
            } else if let due = client.outbound.stuckDeadline {
                next = min(next ?? due, due)
            }
        }
        let now = configuration.clock.wallTime
        let clockNow = configuration.clock.now
        for (id, device) in connections.authenticated where connections[id]?.outbound.isFinished == false {
            let remaining = device.accessTokenExpiresAt.timeIntervalSince(now)
            if remaining <= 0 {
                tokenExpired(id)
            } else {
                let due = clockNow + BridgeHub.expiryDelay(remaining)
                next = min(next ?? due, due)
            }
        }
        return next
    }

    /// A connection of a paired device opened: its token expires at `expiresAt` (wall clock), when the sweep closes it.
    nonisolated func tokenExpiresAt(_ expiresAt: Date) {
        stuckSweep.schedule(at: configuration.clock.now + BridgeHub.expiryDelay(expiresAt.timeIntervalSince(configuration.clock.wallTime)))
    }

    /// Seconds from now as a duration on the bridge's clock, a millisecond late rather than early.
    private static func expiryDelay(_ seconds: TimeInterval) -> Duration {
        .milliseconds(Int64(max(seconds, 0) * 1000) + 1)
    }

    /// Until cancelled: answers agent requests nobody answered in time, or that nobody could answer for
    /// ``BridgeServerConfiguration/orphanedRequestTimeout`` (a permission `cancelled`, anything else an error), so a
    /// prompt whose phone never comes back does not wait forever; drops idle sessions past the bounds of
    /// ``BridgeServerConfiguration/retention``; with auth on, every ``tokenPurgeInterval`` deletes token rows long
    /// expired.
    ///
    /// Each when due: a new or orphaned request moves the timer (``asksChanged()``), so does a session going idle
    /// (``enforceRetention()``).
    nonisolated func sweepOrphanedAsks() async {
        await orphanSweep.run { await self.sweepOrphans() }
    }

    /// One run of the orphaned-request sweep; returns when the next thing it watches can be due.
    private func sweepOrphans() async -> ContinuousClock.Instant? {
        expireOrphanedAsks()
        var next = asks.nextDeadline
        if let idle = enforceRetention() { next = min(next ?? idle, idle) }
        if configuration.authenticator?.store != nil {
            let now = configuration.clock.now
            // The first hour counts from the sweep's start.
            let purge = nextTokenPurge ?? now + BridgeHub.tokenPurgeInterval
            if now >= purge {
                nextTokenPurge = now + BridgeHub.tokenPurgeInterval
                await purgeExpiredTokens()
            } else {
                nextTokenPurge = purge
            }
            if let purge = nextTokenPurge { next = min(next ?? purge, purge) }
        }
        return next
    }

    /// The agent's pending requests changed: the sweep runs by the earliest instant one of them can be due.
    func asksChanged() {
        if let due = asks.nextDeadline { orphanSweep.schedule(at: due) }
    }

    /// Answers the agent's requests that are due (``AskTable/expire(at:)``): nobody answered in time (the clients
    /// asked are told, the agent gets an error), or nobody came back to answer (``answerUnaskable(_:reason:)``).
    private func expireOrphanedAsks() {
        for expiry in asks.expire(at: configuration.clock.now) {
            switch expiry {
            case .unanswered((let askID, let ask), let limit):
                logger.notice("no client answered the agent's request in time", metadata: [
                    "session": "\(ask.sessionID)", "method": "\(ask.method)", "waited": "\(limit.words)",
                ])
                for target in ask.targets.sorted() {
                    notify(target, method: ACPMethod.requestAnswered, params: ["requestId": .int(askID), "sessionId": .string(ask.sessionID), "outcome": "timeout"])
                }
                answerAgent(ask.agentRequestID, .failure(BridgeErrors.unanswered(ask.method, after: limit)), generation: ask.generation)
            case .orphaned((_, let ask), let timeout):
                logger.notice("nobody came back to answer the agent's request", metadata: [
                    "session": "\(ask.sessionID)", "method": "\(ask.method)", "waited": "\(timeout.words)",
                ])
                answerUnaskable(ask, reason: "no client came back within \(timeout.words)")
            }
        }
    }
}
