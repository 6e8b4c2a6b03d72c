import BridgeRPC

/// The errors of the per-connection caps and of the account methods (`_oa/me`, `_oa/logout`).
extension BridgeErrors {
    /// -32003: the connection already has `limit` sessions.
    static func tooManySessions(_ limit: Int) -> JSONRPCError {
        JSONRPCError(
            code: BridgeMethod.tooManySessionsErrorCode,
            message: "Too many sessions: this connection already has \(limit) sessions; reuse one, or open another connection",
            data: ["limit": .int(Int64(limit))])
    }

    /// -32004: a batch of `size` messages, over `limit`; none of it was run.
    static func batchTooLarge(_ size: Int, limit: Int) -> JSONRPCError {
        JSONRPCError(
            code: BridgeMethod.batchTooLargeErrorCode,
            message: "Batch too large: \(size) messages, the limit is \(limit); none was run, send them in smaller batches",
            data: ["size": .int(Int64(size)), "limit": .int(Int64(limit))])
    }

    /// -32005: `_oa/me` or `_oa/logout` on a connection that did not authenticate as a paired device: authentication
    /// is off in the bridge's settings, named in words and by its config key in `data.setting` (`auth`), never by a flag.
    static func noDevice(_ method: String) -> JSONRPCError {
        JSONRPCError(
            code: BridgeMethod.noDeviceErrorCode,
            message: "\(method) needs a paired device: this bridge runs without authentication (auth: none in its settings)",
            data: ["method": .string(method), "setting": "auth"])
    }
}
