import BridgeACP
import BridgeRPC
import BridgeTerminal
import BridgeWorkspace
import Logging

/// The agent's `terminal/*` requests, served on the desktop (see ``TerminalHost``), and their output shown to the
/// session's phones as `_oa/terminal/output`.
extension BridgeHub {
    /// Answers a `terminal/*` request of the agent; `nil` when the answer comes later (`terminal/wait_for_exit` of a
    /// command still running is answered when it ends).
    func serveTerminal(_ request: JSONRPCRequest, generation current: Int) -> Result<JSONValue, JSONRPCError>? {
        do throws(TerminalError) {
            return try terminalAnswer(request, generation: current).map { .success($0) }
        } catch {
            logger.notice("terminal request refused", metadata: ["method": "\(request.method)", "error": "\(error.rpcError.message)"])
            return .failure(error.rpcError)
        }
    }

    private func terminalAnswer(_ request: JSONRPCRequest, generation current: Int) throws(TerminalError) -> JSONValue? {
        let method = request.method
        guard terminals.settings.enabled else { throw .disabled(method: method) }
        let params = request.params
        guard let session = params?["sessionId"]?.stringValue else { throw .badParams(method: method, detail: "sessionId (a string) is required") }
        if method == TerminalMethod.create { return try createTerminal(params, session: session, generation: current) }
        guard let id = params?["terminalId"]?.stringValue else { throw .badParams(method: method, detail: "terminalId (a string) is required") }
        switch method {
        case TerminalMethod.output:
            let snapshot = try terminals.terminal(id, session: session).snapshot
            var answer: [String: JSONValue] = ["output": .string(snapshot.output), "truncated": .bool(snapshot.truncated)]
            if let status = snapshot.exitStatus { answer["exitStatus"] = status.jsonValue }
            return .object(answer)
        case TerminalMethod.waitForExit:
            let terminal = try terminals.terminal(id, session: session)
            return terminal.exitStatus(orWait: TerminalWaiter(agentRequestID: request.id, generation: current))?.jsonValue
        case TerminalMethod.kill:
            try terminals.terminal(id, session: session).process.kill()
            return [:]
        default:
            try terminals.release(id, session: session)
            return [:]
        }
    }

    /// `terminal/create`: the command runs in `cwd`, which must be a directory inside the session's `cwd` or one of
    /// its `additionalDirectories` (default: the session's `cwd`), or, under a wider `--fs-scope`, beneath the scope's
    /// directory, as for `fs/*` paths.
    private func createTerminal(_ params: JSONValue?, session: String, generation current: Int) throws(TerminalError) -> JSONValue {
        let method = TerminalMethod.create
        guard let record = sessions[session] else { throw .unknownSession(session) }
        guard let command = params?["command"]?.stringValue, !command.isEmpty else {
            throw .badParams(method: method, detail: "command (a non-empty string) is required")
        }
        var args: [String] = []
        if let listed = params?["args"], listed != .null {
            guard let strings = listed.arrayValue?.compactMap(\.stringValue), strings.count == listed.arrayValue?.count else {
                throw .badParams(method: method, detail: "args must be an array of strings")
            }
            args = strings
        }
        var environment: [(String, String)] = []
        if let listed = params?["env"], listed != .null {
            for variable in listed.arrayValue ?? [.null] {
                guard let name = variable["name"]?.stringValue, let value = variable["value"]?.stringValue, !name.isEmpty else {
                    throw .badParams(method: method, detail: "env must be an array of {\"name\", \"value\"} strings")
                }
                environment.append((name, value))
            }
        }
        var limit: Int?
        if let given = params?["outputByteLimit"], given != .null {
            guard let value = given.intValue, value >= 0 else {
                throw .badParams(method: method, detail: "outputByteLimit must be a number of bytes, 0 or more")
            }
            limit = Int(clamping: value)
        }
        var directory = record.files
        if let cwd = params?["cwd"], cwd != .null {
            guard let path = cwd.stringValue else { throw .badParams(method: method, detail: "cwd must be a string (an absolute path)") }
            do {
                // As fs/* paths: within the session's directories, or further under a wider --fs-scope.
                directory = try WorkspaceFiles.serving(path, files: record.files, additional: record.additional).directory(path)
            } catch {
                throw .badDirectory(error.rpcError)
            }
        }
        // Started from the directory's descriptor, confined to what fs/* reaches (see TerminalHost).
        let terminal = try terminals.create(
            session: session, generation: current, command: command, args: args, environment: environment,
            directory: directory.descriptor, directoryPath: directory.root, policy: record.files.terminalPolicy(additional: record.additional),
            outputByteLimit: limit)
        return ["terminalId": .string(terminal.id)]
    }

    /// A terminal's update: new output to the session's attached phones (`_oa/terminal/output`, in their dialects);
    /// at the end the exit status too, and the agent's `terminal/wait_for_exit` requests are answered.
    func terminalUpdate(_ update: TerminalUpdate) {
        if let members = sessions[update.session]?.members, !members.isEmpty {
            notify(members, method: BridgeMethod.terminalOutput, params: update.notificationParams)
        }
        guard let status = update.exitStatus else { return }
        for waiter in update.waiters {
            answerAgent(waiter.agentRequestID, .success(status.jsonValue), generation: waiter.generation)
        }
    }
}
