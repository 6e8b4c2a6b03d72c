import BridgeACP
import BridgeRPC
import BridgeTerminal
import BridgeTime
import BridgeWorkspace
import Logging
import NIOCore
import NIOPosix

extension BridgeHub {
    /// A client's request whose write failed: it never reached the agent, and goes to the next one.
    typealias UndeliveredRequest = (route: ClientRoute, agentID: Int64, request: JSONRPCRequest)

    /// The running agent, starting and initializing it first if needed (after a crash, this is the restart).
    func ensureAgent() async -> Result<AgentHandle, JSONRPCError> {
        var undelivered: [UndeliveredRequest] = []
        switch agentLink.state {
        case .running(let handle):
            // Its pipes tell of a dead agent before its exit is reported; a request sent in between used to fail
            // with "could not write to the agent". Replaced now instead.
            // Not while shutting down: the agent is being stopped, and no new one would be run.
            guard !shuttingDown, let reason = handle.agent.endReason else { return .success(handle) }
            agentLink.starting()
            logger.notice("the agent stopped reading or answering; restarting it", metadata: ["reason": "\(reason)", "agent.generation": "\(handle.generation)"])
            undelivered = dropAgent(reason: reason, generation: handle.generation)
            await handle.agent.stop()
        case .starting:
            return await withCheckedContinuation { continuation in
                agentLink.wait(continuation)
            }
        case .idle:
            // Issue 25 item 1 (F5): no agent is started while the bridge shuts down.
            if shuttingDown { return .failure(BridgeErrors.shuttingDown) }
        }
        agentLink.starting()
        let result = await startAgent()
        for waiter in agentLink.started(result) { waiter.resume(returning: result) }
        for request in undelivered { resend(request, on: result) }
        return result
    }

    /// Sends a `session/new` that a dead agent never received to the next agent (started now if needed), once;
    /// false for any other failed request, which the client gets as it is.
    func resendUndelivered(_ route: ClientRoute, agentID: Int64) async -> Bool {
        guard !shuttingDown, route.method == ACPMethod.sessionNew, let dead = agentLink.launched(generation: route.generation),
              let request = dead.agent.takeUndelivered(.int(agentID)) else { return false }
        logger.notice("a session/new did not reach the agent; sending it to the next one", metadata: ["agent.generation": "\(route.generation)"])
        resend((route, agentID, request), on: await ensureAgent())
        return true
    }

    /// Sends an undelivered request to the agent started for it, under its id; a new session only ever goes to two
    /// agents (a failed ``StdioAgent/resend(_:)`` is final).
    private func resend(_ undelivered: UndeliveredRequest, on started: Result<AgentHandle, JSONRPCError>) {
        let old = undelivered.route
        let handle: AgentHandle
        switch started {
        case .success(let running): handle = running
        case .failure(let error):
            complete(old, outcome: .failure(error))
            return
        }
        var moved = undelivered.route
        moved.generation = handle.generation
        routes.put(.client(moved), at: undelivered.agentID)
        do throws(ACPAgentError) {
            try handle.agent.resend(undelivered.request)
        } catch {
            if case .client(let route) = routes.remove(undelivered.agentID) {
                complete(route, outcome: .failure(BridgeErrors.agentGone(error.description)))
            }
        }
    }

    private func startAgent() async -> Result<AgentHandle, JSONRPCError> {
        let current = agentLink.nextGeneration()
        var agentLogger = logger
        agentLogger[metadataKey: "agent.generation"] = "\(current)"
        let agent: any ACPAgent
        if let command = configuration.agentCommand {
            let agentConfiguration = StdioAgentConfiguration(
                command: command,
                environment: configuration.agentEnvironment,
                workingDirectory: configuration.agentWorkingDirectory ?? workspace.root)
            do {
                agent = try await StdioAgent.launch(agentConfiguration, launcher: agentLauncher(logger: agentLogger), logger: agentLogger)
            } catch {
                agentLogger.error("could not start the agent", metadata: ["error": "\(error.description)"])
                return .failure(error.rpcError)
            }
        } else if let inProcessAgent = configuration.inProcessAgent {
            agent = inProcessAgent()
        } else {
            agent = DemoAgent(chunkDelay: configuration.demoChunkDelay, logger: agentLogger)
        }
        if shuttingDown {
            // The bridge began to shut down while the agent was being launched: it is not run.
            await agent.stop()
            return .failure(BridgeErrors.shuttingDown)
        }
        let launched = LaunchedAgent(agent: agent, generation: current)
        agentLink.launch(launched)
        launchSink.yield(launched)

        let params: JSONValue = [
            "protocolVersion": .int(ACPDialect.officialVersion),
            "clientCapabilities": agentClientCapabilities(),
            "clientInfo": ["name": "oa-bridge", "title": .string("oa-bridge \(configuration.serverName)"), "version": .string(configuration.serverVersion)],
        ]
        let response = await bridgeRequest(to: launched, method: ACPMethod.initialize, params: params, timeout: configuration.agentInitializeTimeout)
        switch response.outcome {
        case .success(let result):
            // ACP's negotiation: the agent answers with the version asked if it speaks it, else its latest; a client
            // that does not speak that one closes the connection. The bridge speaks 1.
            guard result["protocolVersion"] == .int(ACPDialect.officialVersion) else {
                let version = result["protocolVersion"]?.jsonText ?? "none"
                agentLogger.error("the agent speaks another ACP protocol version", metadata: ["protocolVersion": "\(version)"])
                await agent.stop()
                return .failure(JSONRPCError.internalError(
                    "the agent answered initialize with protocolVersion \(version); this bridge speaks ACP protocol version \(ACPDialect.officialVersion)",
                    data: ["protocolVersion": result["protocolVersion"] ?? .null]))
            }
            agentLogger.info("agent ready", metadata: ["agentInfo": "\(result["agentInfo"]?.jsonText ?? "none")"])
            return .success(AgentHandle(agent: agent, generation: current, initializeResult: result))
        case .failure(let error):
            agentLogger.error("the agent failed to initialize", metadata: ["error": "\(error.message)"])
            await agent.stop()
            return .failure(JSONRPCError.internalError("the agent failed to initialize: \(error.message)", data: error.data))
        }
    }

    /// Sends a request of the bridge's own to the agent and waits for the answer, at most `timeout`.
    func bridgeRequest(to launched: LaunchedAgent, method: String, params: JSONValue, timeout: Duration) async -> JSONRPCResponse {
        let agentID = routes.reserveID()
        let request = JSONRPCRequest(id: .int(agentID), method: method, params: params)
        if shuttingDown { return JSONRPCResponse(id: request.id, error: BridgeErrors.shuttingDown) }
        return await withTaskGroup(of: Void.self) { group in
            let response = await withCheckedContinuation { (continuation: CheckedContinuation<JSONRPCResponse, Never>) in
                routes.put(.bridge(continuation, generation: launched.generation), at: agentID)
                do throws(ACPAgentError) {
                    try launched.agent.send(.request(request))
                } catch {
                    resolveBridgeRequest(agentID, with: error.rpcError)
                }
                group.addTask {
                    try? await Task.sleep(for: timeout)
                    if !Task.isCancelled {
                        await self.resolveBridgeRequest(agentID, with: JSONRPCError.internalError("the agent did not answer \(method) within \(timeout.words)"))
                    }
                }
            }
            group.cancelAll()
            return response
        }
    }

    private func resolveBridgeRequest(_ agentID: Int64, with error: JSONRPCError) {
        guard case .bridge(let continuation, _) = routes[agentID] else { return }
        _ = routes.remove(agentID)
        continuation.resume(returning: JSONRPCResponse(id: .int(agentID), error: error))
    }

    // MARK: events from the agent

    /// Handles a batch of what an agent sent (one read of its output), in order, as ``agentEvent(_:generation:)``
    /// handles each: a plain notification is relayed without a suspension point; the rest may wait (a file served,
    /// the agent restarted), and what follows in the batch waits behind it.
    func agentEvents(_ batch: [ACPAgentEvent], generation eventGeneration: Int) async {
        for event in batch {
            // An event may have replaced the agent: the rest of its batch is dropped as its later events would be.
            guard eventGeneration == agentLink.generation else { return }
            if case .message(.notification(let notification)) = event, notification.method != ACPMethod.cancelRequest {
                relay(notification)
            } else {
                await agentEvent(event, generation: eventGeneration)
            }
        }
    }

    /// Handles what an agent sent; events of an agent that has been replaced are dropped.
    func agentEvent(_ event: ACPAgentEvent, generation eventGeneration: Int) async {
        guard eventGeneration == agentLink.generation else { return }
        switch event {
        case .message(.response(let response)):
            guard case .int(let agentID) = response.id, let route = routes.remove(agentID) else {
                logger.notice("the agent answered a request the bridge does not know", metadata: ["id": "\(response.id)"])
                return
            }
            switch route {
            case .bridge(let continuation, _): continuation.resume(returning: response)
            case .client(let clientRoute):
                if case .failure = response.outcome, await resendUndelivered(clientRoute, agentID: agentID) { return }
                complete(clientRoute, outcome: response.outcome)
            case .retention(let session, _): retentionCloseAnswered(session, outcome: response.outcome)
            }
        case .message(.notification(let notification)) where notification.method == ACPMethod.cancelRequest:
            agentCancelledRequest(notification.params, generation: eventGeneration)
        case .message(.notification(let notification)):
            relay(notification)
        case .message(.request(let request)):
            await agentAsked(request, generation: eventGeneration)
        case .exited(let reason):
            await agentExited(reason: reason, generation: eventGeneration)
        }
    }

    /// Sends a notification to the clients attached to its session (or to every client if it names none).
    ///
    /// The bridge's own namespace (`_oa/*`) is not the agent's to write: such a notification is dropped.
    func relay(_ notification: JSONRPCNotification) {
        if BridgeHub.isBridgeNamespace(notification.method) {
            logger.debug("dropped a notification of the agent in the bridge's namespace", metadata: ["method": "\(notification.method.prefix(128))"])
            return
        }
        if let scanned = notification.scannedUpdate, relayScanned(notification, scanned) { return }
        guard let session = notification.params?["sessionId"]?.stringValue else {
            notify(connections.ids, method: notification.method, params: notification.params)  // initialized ones only
            return
        }
        if keepEarly(notification, session: session) { return }
        if let state = sessions.state(of: session), state != .live {
            // A dormant session's (the agent's history replay while the bridge restores it): the bridge has its own.
            logger.debug("dropped an update of a session being restored", metadata: ["session": "\(session)", "method": "\(notification.method)"])
            return
        }
        var notification = notification
        if notification.method == ACPMethod.sessionUpdate {
            if let update = notification.params?["update"] { keepState(of: session, update: update) }
            if relaySpliced(notification, session: session) { return }
            notification = sequenced(notification, session: session)
        }
        let members = sessions.members(of: session)
        if members.isEmpty {
            logger.debug("update for a session nobody is attached to", metadata: ["session": "\(session)", "method": "\(notification.method)"])
        }
        notify(members, method: notification.method, params: notification.params)
    }

    /// Relays a `session/update` the agent reader scanned rather than parsed (``JSONRPCNotification/scannedUpdate``)
    /// without reading its params: for a known session whose attached clients are all official, an update that
    /// changes no kept state, and bytes that can go out as they are, it does what ``relaySpliced(_:session:)`` does
    /// (the same seq, frame and replay entry).
    ///
    /// Returns `false`, having done nothing, for anything else (the full path then parses the params).
    private func relayScanned(_ notification: JSONRPCNotification, _ scanned: ScannedUpdate) -> Bool {
        // These two kinds change what the bridge keeps of the session (`keepState`), which reads the params.
        guard notification.method == ACPMethod.sessionUpdate, scanned.kind != "current_mode_update", scanned.kind != "config_option_update",
              scanned.kind != "session_info_update", let raw = notification.rawParams,
              sessions.state(of: scanned.sessionID) == .live else { return false }
        let members = sessions.members(of: scanned.sessionID)
        for id in members where connections[id]?.dialect?.isSeed == true { return false }
        guard raw.isForwardable else { return false }
        var frame = ByteBuffer()
        let appended = sessions.append(to: scanned.sessionID) { seq in
            let (spliced, paramsBytes) = SplicedUpdate.frame(seq: seq, params: raw)
            frame = spliced
            return BufferedUpdate(seq: seq, frame: spliced, paramsBytes: paramsBytes)
        }
        guard let appended else { return false }
        persistAppended(appended, session: scanned.sessionID)
        if members.isEmpty {
            logger.debug("update for a session nobody is attached to", metadata: ["session": "\(scanned.sessionID)", "method": "\(notification.method)"])
        }
        for id in members where connections[id]?.dialect != nil { send(.textBytes(frame), to: id) }
        return true
    }

    /// The agent asked the client something: files are served here, anything else goes to the session's clients.
    private func agentAsked(_ request: JSONRPCRequest, generation current: Int) async {
        if BridgeHub.isBridgeNamespace(request.method) {
            // Only the bridge speaks `_oa/*` to phones: the agent's request never reaches them.
            logger.debug("refused a request of the agent in the bridge's namespace", metadata: ["method": "\(request.method.prefix(128))"])
            answerAgent(request.id, .failure(JSONRPCError.methodNotFound(
                request.method, detail: "the _oa/ namespace is the bridge's own; agents cannot send it")), generation: current)
            return
        }
        guard case .running(let handle) = agentLink.state, handle.generation == current else {
            answerAgent(request.id, .failure(JSONRPCError.internalError("the bridge is still starting this agent")), generation: current)
            return
        }
        _ = handle
        switch request.method {
        case ACPMethod.readTextFile, ACPMethod.writeTextFile:
            // Awaited here, so the agent's later messages stay in order behind the answer; the hub serves others meanwhile.
            answerAgent(request.id, await serveFile(request), generation: current)
            return
        case let method where TerminalMethod.all.contains(method):
            // Answered at once, except a wait for a command still running (answered when it ends).
            if let outcome = serveTerminal(request, generation: current) { answerAgent(request.id, outcome, generation: current) }
            return
        default:
            break
        }
        guard let session = request.params?["sessionId"]?.stringValue, let record = sessions[session] else {
            let ask = PendingAsk(
                agentRequestID: request.id, method: request.method, sessionID: request.params?["sessionId"]?.stringValue ?? "",
                targets: [], generation: current, askedAt: configuration.clock.now)
            answerUnaskable(ask, reason: "no such session")
            return
        }
        if let params = request.params, !BridgeHub.isExtension(request.method),
           record.members.contains(where: { connections[$0]?.dialect?.isSeed == true }) {
            do throws(ACPKeyCollision) {
                _ = try ACPKeyCase.checkedSnakeCase(params)
            } catch {
                answerAgent(request.id, .failure(JSONRPCError.invalidParams("\(request.method): \(error)", data: ["key": .string(error.key)])), generation: current)
                return
            }
        }
        // A request only some clients can answer (elicitation) goes to those; none of them attached is an error now.
        let targets = record.members.filter { canAnswer(request.method, $0) && answersMode(of: request, $0) }
        if targets.isEmpty && !record.members.isEmpty {
            answerAgent(request.id, .failure(JSONRPCError.internalError(
                "no client attached to session \(session) advertises the capability \(request.method) needs",
                data: ["method": .string(request.method)])), generation: current)
            return
        }
        // With nobody attached (the phone is reconnecting) the request waits: `_oa/session/resume` asks it again.
        let askID = asks.add(
            agentRequestID: request.id, method: request.method, sessionID: session, params: request.params,
            targets: targets, generation: current, at: configuration.clock.now)
        for member in targets {
            guard let client = connections[member], let dialect = client.dialect else { continue }
            let forwarded = JSONRPCMessage.request(JSONRPCRequest(id: .int(askID), method: request.method, params: BridgeHub.toClient(request.params, method: request.method, dialect: dialect)))
            send(.text(forwarded.jsonText), to: member)
        }
        logger.debug("agent request forwarded", metadata: ["method": "\(request.method)", "session": "\(session)", "clients": "\(record.members.count)"])
    }

    /// Answers an agent request nobody can answer: a permission request is cancelled, anything else is an error.
    func answerUnaskable(_ ask: PendingAsk, reason: String) {
        let outcome: Result<JSONValue, JSONRPCError> = ask.method == ACPMethod.requestPermission
            ? .success(["outcome": ["outcome": "cancelled"]])
            : .failure(JSONRPCError.internalError("\(reason); nobody can answer \(ask.method)"))
        answerAgent(ask.agentRequestID, outcome, generation: ask.generation)
    }

    func answerAgent(_ id: JSONRPCID, _ outcome: Result<JSONValue, JSONRPCError>, generation current: Int) {
        guard let live = agentLink.launched(generation: current) else { return }
        try? live.agent.send(.response(JSONRPCResponse(id: id, outcome: outcome)))
    }

    /// `fs/read_text_file` and `fs/write_text_file`, confined to the session's working directory by the kernel and
    /// run on a thread pool within ``BridgeServerConfiguration/fileRequestTimeout``, so the hub is never blocked.
    private func serveFile(_ request: JSONRPCRequest) async -> Result<JSONValue, JSONRPCError> {
        guard let session = request.params?["sessionId"]?.stringValue else {
            return .failure(JSONRPCError.invalidParams("\(request.method) needs a sessionId"))
        }
        guard let record = sessions[session] else { return .failure(BridgeErrors.unknownSession(session)) }
        guard let path = request.params?["path"]?.stringValue else {
            return .failure(JSONRPCError.invalidParams("\(request.method) needs a path"))
        }
        // An absolute path under one of the session's additional directories is served there; anything else in `cwd`.
        let files = record.additional.first { path == $0.root || path.hasPrefix($0.root + "/") } ?? record.files
        // The limit runs on the bridge's clock, as every timer of the hub does (a test moves it by hand).
        let io = WorkspaceIO(
            pool: configuration.fileThreadPool, limit: configuration.fileRequestTimeout, clock: BridgeClockAsClock(configuration.clock))
        let outcome: Result<JSONValue, WorkspaceFileError>
        if request.method == ACPMethod.readTextFile {
            let line = request.params?["line"]?.intValue.map { Int($0) }
            let limit = request.params?["limit"]?.intValue.map { Int($0) }
            outcome = await io.run(path: path) { isAbandoned throws(WorkspaceFileError) in
                JSONValue.object(["content": .string(try files.read(path, line: line, limit: limit, isAbandoned: isAbandoned))])
            }
        } else {
            guard let content = request.params?["content"]?.stringValue else {
                return .failure(JSONRPCError.invalidParams("fs/write_text_file needs content (a string)"))
            }
            outcome = await io.run(path: path) { isAbandoned throws(WorkspaceFileError) in
                try files.write(path, content: content, isAbandoned: isAbandoned)
                return JSONValue.object([:])  // WriteTextFileResponse: an object
            }
        }
        switch outcome {
        case .success(let result):
            logger.debug("fs request served", metadata: ["method": "\(request.method)", "path": "\(path)", "session": "\(session)"])
            return .success(result)
        case .failure(let error):
            logger.notice("fs request refused", metadata: [
                "method": "\(request.method)", "path": "\(path.prefix(256))", "session": "\(session)", "error": "\(error.rpcError.message)",
            ])
            return .failure(error.rpcError)
        }
    }

    /// The agent is gone: fail what waits for it, drop its sessions, tell every client; then a `session/new` that
    /// never reached it goes to a new one.
    private func agentExited(reason: String, generation current: Int) async {
        logger.warning("the agent exited", metadata: ["reason": "\(reason)", "agent.generation": "\(current)"])
        let undelivered = dropAgent(reason: reason, generation: current)
        guard !undelivered.isEmpty else { return }
        let started = await ensureAgent()
        for request in undelivered { resend(request, on: started) }
    }

    /// Forgets the agent of generation `current`: fails what waits for it (except the `session/new`s it never
    /// received, returned to be sent to the next agent), drops its sessions, tells every client.
    private func dropAgent(reason: String, generation current: Int) -> [UndeliveredRequest] {
        let dead = agentLink.ended(generation: current, reason: reason)?.agent
        let error = BridgeErrors.agentGone(reason)
        var undelivered: [UndeliveredRequest] = []
        for agentID in routes.ids(where: { $0.generation == current }) {
            // One at a time, as each is settled: what a settled one looks up still sees the others.
            guard let route = routes.remove(agentID) else { continue }
            switch route {
            case .bridge(let continuation, _): continuation.resume(returning: JSONRPCResponse(id: .int(agentID), error: error))
            case .client(let clientRoute) where clientRoute.method == ACPMethod.sessionNew:
                if let request = dead?.takeUndelivered(.int(agentID)) {
                    undelivered.append((clientRoute, agentID, request))
                } else {
                    complete(clientRoute, outcome: .failure(error))
                }
            case .client(let clientRoute): complete(clientRoute, outcome: .failure(error))
            case .retention: break
            }
        }
        asks.removeAll { $0.generation == current }
        terminals.releaseAll()
        // Issue 25 item 2: the sessions wait for the next agent (restored when a client attaches), not forgotten; the
        // notifications kept for sessions being created go.
        sessions.agentGone()
        connections.detachAll()
        notify(Array(connections.ids), method: ACPMethod.agentExited, params: ["reason": .string(reason), "restartsOn": .string(ACPMethod.sessionNew)])
        return undelivered
    }
}
