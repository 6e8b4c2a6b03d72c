import BridgeACP
package import BridgeProcess
package import BridgeRPC

/// Why an agent's `terminal/*` request was refused or failed.
///
/// Matched by case; ``rpcError`` is the answer the agent gets.
package enum TerminalError: Error, Equatable, Sendable {
    /// Terminals are off on this bridge (the `terminal` setting, or the kernel cannot confine them); the agent was told
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

    /// A setting of the bridge that changes this answer (a key of its config file, in its `data.setting` on the wire).
    package enum Setting: String, Sendable {
        /// Whether terminals are served at all (`terminal: false` turns them off).
        case terminal
        /// Whether terminals are confined by Landlock (`terminal-confinement: unconfined` runs them unconfined).
        case terminalConfinement = "terminal-confinement"
    }

    /// The setting whose change would let the request through, if one would: ``Setting/terminal`` for terminals
    /// off, ``Setting/terminalConfinement`` for a command that cannot be confined; `nil` for the other cases.
    package var setting: Setting? {
        switch self {
        case .disabled: .terminal
        case .unconfinable: .terminalConfinement
        default: nil
        }
    }

    /// The JSON-RPC error the agent is answered with: -32601 when terminals are off, -32602 for bad params and a
    /// refused `cwd`, -32002 for an unknown session or terminal, -32603 for limits and a failed start.
    package var rpcError: JSONRPCError {
        switch self {
        case .disabled(let method):
            var error = JSONRPCError.methodNotFound(
                method, detail: "terminals are off on this bridge (its owner turned them off in the bridge's settings (terminal: false), "
                    + "or the kernel has no Landlock to confine them: the bridge's doctor says which), and the agent was told "
                    + "clientCapabilities.terminal = false; run the command another way")
            error.data = ["method": .string(method), "setting": .string(Setting.terminal.rawValue)]
            return error
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
                "terminals cannot be confined to this bridge's file scope here (\(reason)), so none is run; terminal confinement is on "
                    + "for this bridge, and its owner can turn it off in the bridge's settings (terminal confinement: unconfined) "
                    + "to run them anyway",
                data: ["setting": .string(Setting.terminalConfinement.rawValue)])
        case .launchFailed(let command, let reason):
            return JSONRPCError.internalError("could not start \(command): \(reason)", data: ["command": .string(command)])
        case .spawnFailed(let command, let error):
            return JSONRPCError.internalError(
                "could not start \(command): \(error)",
                data: ["command": .string(command), "errno": .int(Int64(error.errno)), "stage": .string(error.stage.rawValue)])
        }
    }
}
