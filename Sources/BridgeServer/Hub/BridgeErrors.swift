import BridgeACP
import BridgeRPC
import BridgeTime

/// The bridge's own JSON-RPC errors (implementation-defined server errors use -32000...-32099;
/// -32000 and -32002 are avoided because ACP gives them meanings).
enum BridgeErrors {
    /// -32001: too many requests waiting for the agent on one connection.
    static let tooManyPendingCode = -32001
    /// -32002: ACP's "resource not found".
    static let resourceNotFoundCode = ACPMethod.resourceNotFoundCode

    static func notInitialized(_ method: String) -> JSONRPCError {
        JSONRPCError.invalidRequest(
            "\(method) before initialize; send initialize first (protocol_version \"0.2.x\" or protocolVersion 1)",
            data: ["method": .string(method)])
    }

    static func tooManyPending(_ limit: Int) -> JSONRPCError {
        JSONRPCError(
            code: tooManyPendingCode,
            message: "Too many pending requests: this connection already has \(limit) requests waiting for the agent; wait for answers",
            data: ["limit": .int(Int64(limit))])
    }

    static func frameTooLarge(_ size: Int, limit: Int) -> JSONRPCError {
        JSONRPCError.invalidRequest(
            "message of \(size) bytes exceeds the limit of \(limit) bytes",
            data: ["size": .int(Int64(size)), "limit": .int(Int64(limit))])
    }

    static let binaryFrame = JSONRPCError.invalidRequest(
        "binary WebSocket frames are not supported; send each JSON-RPC message as a text frame")

    static func agentGone(_ reason: String) -> JSONRPCError {
        JSONRPCError.internalError("\(reason); the agent will be restarted on the next session/new", data: ["reason": .string(reason)])
    }

    /// -32603 for what waited on the agent when the bridge began to shut down (issue 25 item 1: a request waiting for
    /// an agent that starts slowly must not hold the shutdown).
    static let shuttingDown = JSONRPCError.internalError(
        "the bridge is shutting down; connect again when it is back", data: ["reason": "bridge shutting down"])

    static func notAttached(_ session: String) -> JSONRPCError {
        JSONRPCError.invalidParams(
            "session \(session) is not attached to this connection; create it with session/new or attach with session/load",
            data: ["sessionId": .string(session)])
    }

    /// -32002 from `_oa/session/resume`: the updates after `requestedAfter` are no longer all buffered.
    static func gap(oldest: Int64, requestedAfter: Int64, latest: Int64) -> JSONRPCError {
        JSONRPCError(
            code: BridgeMethod.gapErrorCode,
            message: "gap: updates after seq \(requestedAfter) are no longer buffered (the oldest kept is \(oldest)); "
                + "the connection is attached again, reload the session's history (session/load) to fill the gap",
            data: ["oldestSeq": .int(oldest), "requestedAfter": .int(requestedAfter), "lastSeq": .int(latest)])
    }

    /// -32603 to the agent: no client answered its request within `limit`.
    static func unanswered(_ method: String, after limit: Duration) -> JSONRPCError {
        JSONRPCError.internalError(
            "no client answered \(method) within \(limit.words) (none attached, or none answered)",
            data: ["method": .string(method), "timeoutSeconds": .int(limit.components.seconds)])
    }

    static func unknownSession(_ session: String) -> JSONRPCError {
        .unknownSession(session)
    }
}
