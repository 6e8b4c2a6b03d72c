import BridgeACP
package import BridgeProcess
package import BridgeRPC

/// Why an agent's `terminal/*` request was refused or failed. Matched by case; ``rpcError`` is the answer the agent
/// gets.
package enum TerminalError: Error, Equatable, Sendable {
    /// Terminals are off on this bridge (`--no-terminal`, or the kernel cannot confine them); the agent was told
    /// `terminal: false`.
    case disabled(method: String)
    /// The request lacks a field, or a field has the wrong type.
    case badParams(method: String, detail: String)
    /// The session is not one the bridge runs.
    case unknownSession(String)
    /// No such terminal in the session (never created, or released).
    case unknownTerminal(session: String, terminal: String)
    /// The session holds ``TerminalSettings/maxPerSession`` terminals already.
    case tooManyInSession(session: String, limit: Int)
    /// All sessions together hold ``TerminalSettings/maxTotal`` terminals already.
    case tooMany(limit: Int)
    /// `cwd` is not a directory inside the session's directories.
    case badDirectory(JSONRPCError)
    /// The command could not be started.
    case launchFailed(command: String, reason: String)
    /// The command's process could not be started: the step and the `errno` (``ChildProcessError``).
    case spawnFailed(command: String, ChildProcessError)
    /// The command cannot be confined (`reason`: the kernel has no Landlock, or a rule was refused), so it is not run.
    case unconfinable(reason: String)

    /// The JSON-RPC error the agent is answered with: -32601 when terminals are off, -32602 for bad params and a
    /// refused `cwd`, -32002 for an unknown session or terminal, -32603 for limits and a failed start.
    package var rpcError: JSONRPCError {
        switch self {
        case .disabled(let method):
            return JSONRPCError.methodNotFound(
                method, detail: "terminals are off on this bridge (oa-bridge serve --no-terminal or terminal: false in its config file, or "
                    + "a kernel without Landlock to confine them: see oa-bridge doctor), and the agent was told "
                    + "clientCapabilities.terminal = false; run the command another way")
        case .badParams(let method, let detail):
            return JSONRPCError.invalidParams("\(method): \(detail)")
        case .unknownSession(let session):
            return .unknownSession(session)
        case .unknownTerminal(let session, let terminal):
            return JSONRPCError(
                code: ACPMethod.resourceNotFoundCode,
                message: "Unknown terminal \(terminal) in session \(session) (never created, or already released)",
                data: ["sessionId": .string(session), "terminalId": .string(terminal)])
        case .tooManyInSession(let session, let limit):
            return JSONRPCError.internalError(
                "session \(session) already holds \(limit) terminals, the most this bridge allows; release one (terminal/release) first",
                data: ["sessionId": .string(session), "limit": .int(Int64(limit))])
        case .tooMany(let limit):
            return JSONRPCError.internalError(
                "the bridge already holds \(limit) terminals for all sessions, the most it allows; release one (terminal/release) first",
                data: ["limit": .int(Int64(limit))])
        case .badDirectory(let error):
            return JSONRPCError(code: error.code, message: "terminal/create cwd: \(error.message)", data: error.data)
        case .unconfinable(let reason):
            return JSONRPCError.internalError(
                "terminals cannot be confined to this bridge's --fs-scope here (\(reason)), so none is run; the desktop's user may "
                    + "start the bridge with --terminal-confinement unconfined to run them anyway")
        case .launchFailed(let command, let reason):
            return JSONRPCError.internalError("could not start \(command): \(reason)", data: ["command": .string(command)])
        case .spawnFailed(let command, let error):
            return JSONRPCError.internalError(
                "could not start \(command): \(error)",
                data: ["command": .string(command), "errno": .int(Int64(error.errno)), "stage": .string(error.stage.rawValue)])
        }
    }
}
