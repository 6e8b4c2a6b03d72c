import BridgeRPC
import BridgeTime

/// The error of a resume of a session dropped for retention.
extension BridgeErrors {
    /// -32006: `session` was dropped for `reason` (see ``SessionRetention``); the phone starts over with `session/new`.
    static func sessionDropped(_ session: String, reason: RetentionReason, retention: SessionRetention) -> JSONRPCError {
        let why: String
        switch reason {
        case .idleTimeout:
            why = "nobody was attached to it for \(retention.idleTimeout?.words ?? "too long")"
        case .maxIdleSessions:
            why = "more than \(retention.maxIdleSessions) sessions were idle and it was idle the longest"
        case .maxIdleReplayBytes:
            why = "the idle sessions' replay buffers passed \(retention.maxIdleReplayBytes) bytes and it was idle the longest"
        }
        return JSONRPCError(
            code: BridgeMethod.sessionDroppedErrorCode,
            message: "Session \(session) was dropped: \(why) (\(reason.option) on the desktop changes this); "
                + "start a new session with session/new",
            data: ["sessionId": .string(session), "reason": .string(reason.rawValue)])
    }
}
