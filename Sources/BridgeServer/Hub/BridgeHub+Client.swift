import BridgeACP
import BridgeRPC
import BridgeTime
import BridgeWorkspace
import Logging
import Metrics

extension BridgeHub {
    /// Handles one text frame from a client.
    func receive(_ text: String, from id: ConnectionID) async {
        guard connections[id] != nil else { return }
        BridgeMetrics.messagesIn.increment()
        switch JSONRPCFrame(parsing: text) {
        case .single(let element):
            if let work = handle(element, from: id, batch: nil) { await perform(work, from: id) }
        case .batch(let elements):
            guard elements.count <= configuration.maxBatchSize else {
                connections[id]?.logger.notice("batch over the size limit", metadata: [
                    "size": "\(elements.count)", "limit": "\(configuration.maxBatchSize)"])
                fail(id, request: .null, BridgeErrors.batchTooLarge(elements.count, limit: configuration.maxBatchSize), batch: nil)
                return
            }
            let expected = elements.filter { element in
                switch element {
                case .invalid, .message(.request): return true
                case .message: return false
                }
            }.count
            let batch = expected > 0 ? batches.open(for: id, expecting: expected) : nil
            for (position, element) in elements.enumerated() {
                if position > 0, position % BridgeHub.batchSlice == 0 {
                    // The hub is free while this task yields: other connections' messages are served in between.
                    await Task.yield()
                    guard connections[id] != nil else { return }
                }
                if let work = handle(element, from: id, batch: batch) { await perform(work, from: id) }
            }
        }
    }

    /// What a client's message still has to do after a wait (for the agent to start, or for the token store): run by
    /// ``perform(_:from:)`` in a child task of the connection's reader.
    enum ReceiveWork: Sendable {
        /// `initialize`: starts the agent if needed.
        case initialize(JSONRPCRequest, batch: UInt64?)
        /// A request for the agent, which is not running (or has to be restarted) yet.
        case forward(ForwardedRequest)
        /// `session/load` or `session/resume`.
        case reattach(JSONRPCRequest, params: JSONValue?, batch: UInt64?)
        /// `_oa/session/resume` of a dormant session: restored first.
        case restore(JSONRPCRequest, params: JSONValue?, batch: UInt64?)
        /// `_oa/me`.
        case me(JSONRPCRequest, batch: UInt64?)
        /// `_oa/logout`.
        case logout(JSONRPCRequest, batch: UInt64?)
    }

    /// A request to forward to the agent, with where its answer goes and what the bridge keeps of it.
    struct ForwardedRequest: Sendable {
        /// The client's request.
        var request: JSONRPCRequest
        /// Its params, in official spelling, rewritten as the agent must see them.
        var params: JSONValue?
        /// The batch the answer belongs to.
        var batch: UInt64?
        /// A new session's working directory.
        var files: WorkspaceFiles?
        /// A new session's additional directories.
        var additional: [WorkspaceFiles] = []
        /// The session the request is about.
        var sessionID: String?
        /// The mode, model or option asked for.
        var requested: JSONValue?
        /// A prompt's idempotency key.
        var idempotencyKey: String? = nil
    }

    /// Runs what has to wait in a task of its own, and waits for it (the client's next message is handled after it):
    /// the frames of the awaited calls (starting the agent, the token store) are given back when that task ends,
    /// instead of staying with the connection's reader task for the connection's life.
    ///
    /// That task runs on the global executor, not on the event loop the connection's task prefers
    /// (``EventLoopTaskExecutor``): starting an agent and the token store's SQLite calls block their thread.
    @inline(never)
    private func perform(_ work: ReceiveWork, from id: ConnectionID) async {
        await withDiscardingTaskGroup { group in
            group.addTask(executorPreference: globalConcurrentExecutor) { await self.run(work, from: id) }
        }
    }

    @inline(never)
    private func run(_ work: ReceiveWork, from id: ConnectionID) async {
        switch work {
        case .initialize(let request, let batch):
            await initialize(request, from: id, batch: batch)
        case .forward(let forwarded):
            await forward(
                forwarded.request, params: forwarded.params, from: id, batch: forwarded.batch, files: forwarded.files,
                additional: forwarded.additional, sessionID: forwarded.sessionID, requested: forwarded.requested,
                idempotencyKey: forwarded.idempotencyKey)
        case .reattach(let request, let params, let batch):
            await reattach(request, params: params, from: id, batch: batch)
        case .restore(let request, let params, let batch):
            if let session = params?["sessionId"]?.stringValue, let error = await restoreIfDormant(session) {
                fail(id, request: request.id, error, batch: batch)
            } else if let again = resume(request, params: params, from: id, batch: batch) {
                // Still dormant (another restore failed to start the agent): one more try, then the error.
                if case .restore = again {
                    fail(id, request: request.id, BridgeErrors.agentGone("the agent could not be started to restore the session"), batch: batch)
                }
            }
        case .me(let request, let batch):
            await me(request, from: id, batch: batch)
        case .logout(let request, let batch):
            await logout(request, from: id, batch: batch)
        }
    }

    // Synchronous, here and in the handlers below: an async function's frame is allocated in the calling task's
    // allocator, and a task keeps the largest slabs it ever used until it ends (heaptrack: `handle` ~4.8 KB per idle
    // connection when it was async). What must wait comes back as a ``ReceiveWork``.
    private func handle(_ element: JSONRPCFrame.Element, from id: ConnectionID, batch: UInt64?) -> ReceiveWork? {
        switch element {
        case .invalid(let requestID, let error):
            connections[id]?.logger.notice("invalid JSON-RPC from client", metadata: ["error": "\(error.message)"])
            fail(id, request: requestID, error, batch: batch)
            return nil
        case .message(.response(let response)):
            clientAnswered(response, from: id)
            return nil
        case .message(.notification(let notification)):
            handle(notification, from: id)
            return nil
        case .message(.request(let request)):
            return handle(request, from: id, batch: batch)
        }
    }

    private func handle(_ notification: JSONRPCNotification, from id: ConnectionID) {
        guard let dialect = connections[id]?.dialect else {
            // Not JSON-RPC's usual silence for notifications: before initialize, every method gets an error.
            fail(id, request: .null, BridgeErrors.notInitialized(notification.method), batch: nil)
            return
        }
        let params: JSONValue?
        do {
            params = try BridgeHub.fromClient(notification.params, method: notification.method, dialect: dialect)
        } catch {
            fail(id, request: .null, error, batch: nil)
            return
        }
        if notification.method == ACPMethod.cancelRequest {
            clientCancelledRequest(params, from: id)
            return
        }
        if notification.method == ACPMethod.sessionCancel {
            if let error = cancel(params, from: id) {
                connections[id]?.logger.notice("session/cancel refused", metadata: ["error": "\(error.message)"])
            }
            return
        }
        guard case .running(let handle) = agentLink.state else {
            connections[id]?.logger.notice("notification dropped: the agent is not running", metadata: ["method": "\(notification.method)"])
            return
        }
        try? handle.agent.send(.notification(JSONRPCNotification(method: notification.method, params: params)))
    }

    private func handle(_ request: JSONRPCRequest, from id: ConnectionID, batch: UInt64?) -> ReceiveWork? {
        if request.method == BridgeMethod.ping {
            // The web app's heartbeat: answered at once, before `initialize` too, whatever the agent is doing.
            deliver(JSONRPCResponse(id: request.id, result: [:]), to: id, batch: batch)
            return nil
        }
        if request.method == ACPMethod.initialize {
            // In a task of its own (perform): the frames of initialize (and of starting the agent) are given back
            // when it ends.
            return .initialize(request, batch: batch)
        }
        guard let client = connections[id], let dialect = client.dialect else {
            fail(id, request: request.id, BridgeErrors.notInitialized(request.method), batch: batch)
            return nil
        }
        let params: JSONValue?
        do {
            params = try BridgeHub.fromClient(request.params, method: request.method, dialect: dialect)
        } catch {
            fail(id, request: request.id, error, batch: batch)
            return nil
        }
        switch request.method {
        case ACPMethod.sessionCancel:
            if let error = cancel(params, from: id) {
                fail(id, request: request.id, error, batch: batch)
            } else {
                deliver(JSONRPCResponse(id: request.id, result: .null), to: id, batch: batch)
            }
            return nil
        case ACPMethod.sessionNew, ACPMethod.sessionFork:
            return newSession(request, params: params, from: id, batch: batch)
        case ACPMethod.sessionLoad, ACPMethod.sessionResume:
            return .reattach(request, params: params, batch: batch)
        case ACPMethod.sessionClose, ACPMethod.sessionDelete:
            // From any client, attached or not: the agent decides; its answer drops the bridge's record.
            return forwardNow(ForwardedRequest(request: request, params: params, batch: batch, sessionID: params?["sessionId"]?.stringValue), from: id)
        case ACPMethod.sessionList:
            // The params are kept with the route: the answer gets the bridge's kept sessions (listWithKept).
            return forwardNow(ForwardedRequest(request: request, params: params, batch: batch, requested: params ?? [:]), from: id)
        case ACPMethod.authenticate:
            if let refused = desktopOnlyAuthentication(params) {
                fail(id, request: request.id, refused, batch: batch)
                return nil
            }
            return forwardNow(ForwardedRequest(request: request, params: params, batch: batch), from: id)
        case BridgeMethod.sessionResume:
            return resume(request, params: params, from: id, batch: batch)
        case BridgeMethod.me:
            return .me(request, batch: batch)
        case BridgeMethod.logout:
            return .logout(request, batch: batch)
        default:
            if request.method.hasPrefix("session/"), let session = params?["sessionId"]?.stringValue, !client.sessions.contains(session) {
                let error = switch sessions.state(of: session) {
                case nil: BridgeErrors.unknownSession(session)
                // Kept from before a restart: -32002 as before, so a client attaches again (which restores it).
                case .dormant?: BridgeErrors.notRunning(session)
                default: BridgeErrors.notAttached(session)
                }
                fail(id, request: request.id, error, batch: batch)
                return nil
            }
            if request.method == ACPMethod.sessionPrompt, let session = params?["sessionId"]?.stringValue {
                return prompt(request, params: params, session: session, from: id, batch: batch)
            } else if let session = params?["sessionId"]?.stringValue, let requested = BridgeHub.choice(request.method, params) {
                return forwardNow(ForwardedRequest(request: request, params: params, batch: batch, sessionID: session, requested: requested), from: id)
            } else {
                return forwardNow(ForwardedRequest(request: request, params: params, batch: batch), from: id)
            }
        }
    }

    // MARK: initialize

    @inline(never)
    private func initialize(_ request: JSONRPCRequest, from id: ConnectionID, batch: UInt64?) async {
        let dialect: ACPDialect
        do {
            dialect = try ACPDialect.negotiate(initializeParams: request.params)
        } catch {
            connections[id]?.logger.notice("initialize refused", metadata: ["error": "\(error.message)"])
            fail(id, request: request.id, error, batch: batch)
            return
        }
        // Kept before the agent starts: what the phones advertise decides what the agent is told (see
        // agentClientCapabilities).
        connections[id]?.capabilities = request.params.map(dialect.toAgent)?["clientCapabilities"]
        connections[id]?.initializing += 1
        let started = await ensureAgent()
        connections[id]?.initializing -= 1
        let handle: AgentHandle
        switch started {
        case .success(let running): handle = running
        case .failure(let error):
            fail(id, request: request.id, error, batch: batch)
            return
        }
        guard connections[id] != nil else { return }
        let result: JSONValue
        do throws(ACPKeyCollision) {
            result = try initializeResult(for: dialect, agent: handle)
        } catch {
            // Never merged: the phone learns which keys of the agent's answer its dialect cannot tell apart.
            connections[id]?.logger.warning("the agent's initialize answer has keys that collide in the client's dialect", metadata: ["collision": "\(error)"])
            fail(id, request: request.id, error.rpcError(fromClient: false), batch: batch)
            return
        }
        connections[id]?.dialect = dialect
        connections[id]?.logger.info("client initialized", metadata: ["dialect": "\(dialect)"])
        deliver(JSONRPCResponse(id: request.id, result: result), to: id, batch: batch)
    }

    /// The `initialize` answer for a client: every field the agent answered (capabilities, auth methods, info, and
    /// any other), in the client's dialect, with the protocol version negotiated for the client; `_meta` is the
    /// agent's, untouched, plus the bridge's working directory.
    ///
    /// Throws when two of the agent's keys become one in `dialect` (``ACPKeyCollision``).
    func initializeResult(for dialect: ACPDialect, agent handle: AgentHandle) throws(ACPKeyCollision) -> JSONValue {
        var official = handle.initializeResult.objectValue ?? [:]
        let agentMeta = official.removeValue(forKey: "_meta")?.objectValue ?? [:]
        official["protocolVersion"] = nil
        if official["agentCapabilities"] == nil { official["agentCapabilities"] = [:] }
        if official["authMethods"] == nil { official["authMethods"] = [] }
        if official["agentInfo"] == nil {
            official["agentInfo"] = AgentInfo(
                name: configuration.agentCommand?.first ?? "agent",
                title: configuration.agentCommand?.joined(separator: " ") ?? "agent",
                version: "unknown").jsonValue
        }
        var members = try dialect.checkedToClient(.object(official)).objectValue ?? [:]
        var meta = agentMeta
        switch dialect {
        case .seed(let version):
            members["protocol_version"] = .string(version)
            meta["working_directory"] = .string(workspace.root)
        case .v1:
            members["protocolVersion"] = .int(ACPDialect.officialVersion)
            meta["workingDirectory"] = .string(workspace.root)
        }
        members["_meta"] = .object(meta)
        return .object(members)
    }

    // MARK: sessions

    /// The files a new or loaded session works in: its `cwd` (which must lie inside the bridge's working
    /// directory), or the bridge's working directory when none is given.
    ///
    /// Fills `cwd` and `mcpServers` in.
    func sessionFiles(_ params: inout JSONValue?) throws(JSONRPCError) -> WorkspaceFiles {
        var members = params?.objectValue ?? [:]
        let files: WorkspaceFiles
        if let cwd = members["cwd"] {
            guard case .string(let path) = cwd else {
                throw JSONRPCError.invalidParams("cwd must be a string (an absolute path), got \(cwd.typeName)")
            }
            files = try workspace.session(cwd: path)
        } else {
            files = workspace
        }
        members["cwd"] = .string(files.root)
        if members["mcpServers"] == nil { members["mcpServers"] = [] }
        params = .object(members)
        return files
    }

    /// The session's `additionalDirectories`, each of which must lie inside the bridge's working directory like `cwd`;
    /// their real paths are filled in.
    func additionalFiles(_ params: inout JSONValue?) throws(JSONRPCError) -> [WorkspaceFiles] {
        guard var members = params?.objectValue, let listed = members["additionalDirectories"], listed != .null else { return [] }
        guard case .array(let paths) = listed else {
            throw JSONRPCError.invalidParams("additionalDirectories must be an array of absolute paths, got \(listed.typeName)")
        }
        var result: [WorkspaceFiles] = []
        for path in paths {
            guard case .string(let text) = path else {
                throw JSONRPCError.invalidParams("additionalDirectories must hold strings (absolute paths), got \(path.typeName)")
            }
            result.append(try workspace.session(cwd: text))
        }
        members["additionalDirectories"] = .array(result.map { .string($0.root) })
        params = .object(members)
        return result
    }

    /// `session/new` and `session/fork`: the new session's files come from `cwd` (and `additionalDirectories`); the
    /// agent's answer registers it.
    private func newSession(_ request: JSONRPCRequest, params: JSONValue?, from id: ConnectionID, batch: UInt64?) -> ReceiveWork? {
        if let error = sessionLimitError(id) {
            fail(id, request: request.id, error, batch: batch)
            return nil
        }
        var params = params
        let workspace: SessionWorkspace
        do {
            workspace = try sessionWorkspace(&params)
        } catch {
            fail(id, request: request.id, error, batch: batch)
            return nil
        }
        return forwardNow(ForwardedRequest(
            request: request, params: params, batch: batch, files: workspace.files, additional: workspace.additional), from: id)
    }

    /// A session's working directory and additional directories.
    typealias SessionWorkspace = (files: WorkspaceFiles, additional: [WorkspaceFiles])

    /// The session's working directory and additional directories from `params`, which are rewritten as the agent
    /// must see them; the error is what the client gets.
    func sessionWorkspace(_ params: inout JSONValue?) throws(JSONRPCError) -> SessionWorkspace {
        let files = try sessionFiles(&params)
        return (files, try additionalFiles(&params))
    }

    func attach(_ id: ConnectionID, to session: String) {
        guard connections[id] != nil else { return }
        let members = sessions.attach(id, to: session)
        connections[id]?.sessions.insert(session)
        connections[id]?.logger.info("attached to session", metadata: ["session": "\(session)", "members": "\(members ?? 0)"])
    }

    func detach(_ id: ConnectionID, from session: String) {
        sessions.detach(id, from: session)
        connections[id]?.sessions.remove(session)
    }

    /// Forwards `session/cancel` to the agent, and answers pending permission requests of that session as cancelled.
    ///
    /// Returns the error to report, if any.
    private func cancel(_ params: JSONValue?, from id: ConnectionID) -> JSONRPCError? {
        guard let session = params?["sessionId"]?.stringValue else {
            return JSONRPCError.invalidParams("session/cancel needs a sessionId")
        }
        guard connections[id]?.sessions.contains(session) == true else {
            return sessions.contains(session) ? BridgeErrors.notAttached(session) : BridgeErrors.unknownSession(session)
        }
        guard case .running(let handle) = agentLink.state else { return BridgeErrors.agentGone("the agent is not running") }
        connections[id]?.logger.info("cancelling the prompt", metadata: ["session": "\(session)"])
        return cancelTurn(session, params: params, agent: handle)
    }

    /// Sends `session/cancel` to the agent, then settles every pending request of the agent for the session:
    /// permissions are answered `cancelled` (the clients asked get `_oa/request_answered`), anything else error -32800
    /// (the clients asked get `$/cancel_request`).
    ///
    /// ACP's order: the agent learns that the turn is cancelled before it reads the `cancelled` answers, so it does
    /// not take them for the user's refusal. Returns the error to report.
    func cancelTurn(_ session: String, params: JSONValue?, agent handle: AgentHandle) -> JSONRPCError? {
        var failure: JSONRPCError?
        do {
            try handle.agent.send(.notification(JSONRPCNotification(method: ACPMethod.sessionCancel, params: params ?? ["sessionId": .string(session)])))
        } catch {
            failure = error.rpcError
        }
        for (askID, ask) in asks.removeAll(where: { $0.sessionID == session }) {
            if ask.method == ACPMethod.requestPermission {
                notify(ask.targets, method: ACPMethod.requestAnswered, params: ["requestId": .int(askID), "sessionId": .string(session), "outcome": "cancelled"])
                answerUnaskable(ask, reason: "the prompt was cancelled")
            } else {
                notify(ask.targets, method: ACPMethod.cancelRequest, params: ["requestId": .int(askID)])
                answerAgent(ask.agentRequestID, .failure(JSONRPCError(
                    code: ACPMethod.requestCancelledCode, message: "Request cancelled: the prompt was cancelled (session/cancel)")), generation: ask.generation)
            }
        }
        return failure
    }

    // MARK: forwarding

    /// Sends a client request to the agent under a fresh id, remembering where the answer goes; starts (or restarts)
    /// the agent first if needed.
    @inline(never)
    func forward(
        _ request: JSONRPCRequest, params: JSONValue?, from id: ConnectionID, batch: UInt64?,
        files: WorkspaceFiles? = nil, additional: [WorkspaceFiles] = [], sessionID: String? = nil, requested: JSONValue? = nil,
        idempotencyKey: String? = nil
    ) async {
        guard let client = connections[id] else { return }
        guard client.pending < configuration.maxPendingRequests else {
            client.logger.warning("too many pending requests", metadata: ["limit": "\(configuration.maxPendingRequests)"])
            let error = BridgeErrors.tooManyPending(configuration.maxPendingRequests)
            settlePrompt(session: sessionID, key: idempotencyKey, outcome: .failure(error))
            fail(id, request: request.id, error, batch: batch)
            return
        }
        connections[id]?.pending += 1
        let handle: AgentHandle
        switch await ensureAgent() {
        case .success(let running): handle = running
        case .failure(let error):
            connections[id]?.pending -= 1
            settlePrompt(session: sessionID, key: idempotencyKey, outcome: .failure(error))
            if let sessionID, request.method == ACPMethod.sessionLoad || request.method == ACPMethod.sessionResume {
                detach(id, from: sessionID)
                sessions.closeIfUnattached(sessionID)
            }
            fail(id, request: request.id, error, batch: batch)
            return
        }
        sendToAgent(ForwardedRequest(
            request: request, params: params, batch: batch, files: files, additional: additional, sessionID: sessionID, requested: requested,
            idempotencyKey: idempotencyKey),
            from: id, to: handle)
    }

    /// ``forward(_:params:from:batch:files:additional:sessionID:requested:idempotencyKey:)`` without a suspension when the agent is
    /// running (what `ensureAgent` would answer at once); otherwise the work to run in a task of its own.
    func forwardNow(_ forwarded: ForwardedRequest, from id: ConnectionID) -> ReceiveWork? {
        guard case .running(let handle) = agentLink.state, shuttingDown || handle.agent.endReason == nil else {
            return .forward(forwarded)
        }
        guard let client = connections[id] else { return nil }
        guard client.pending < configuration.maxPendingRequests else {
            client.logger.warning("too many pending requests", metadata: ["limit": "\(configuration.maxPendingRequests)"])
            let error = BridgeErrors.tooManyPending(configuration.maxPendingRequests)
            settlePrompt(session: forwarded.sessionID, key: forwarded.idempotencyKey, outcome: .failure(error))
            fail(id, request: forwarded.request.id, error, batch: forwarded.batch)
            return nil
        }
        connections[id]?.pending += 1
        sendToAgent(forwarded, from: id, to: handle)
        return nil
    }

    /// Queues the request to the running agent under a fresh id with its route (the client's `pending` already
    /// counts it).
    ///
    /// Nothing suspends here: the route and the queued line go together (a failed write comes back as the agent's
    /// error response on this route).
    private func sendToAgent(_ forwarded: ForwardedRequest, from id: ConnectionID, to handle: AgentHandle) {
        let request = forwarded.request
        let agentID = routes.add(.client(ClientRoute(
            connection: id, clientID: request.id, method: request.method, batch: forwarded.batch,
            files: forwarded.files, additional: forwarded.additional, sessionID: forwarded.sessionID, generation: handle.generation,
            requested: forwarded.requested, started: configuration.clock.now, idempotencyKey: forwarded.idempotencyKey)))
        do {
            try handle.agent.send(.request(JSONRPCRequest(id: .int(agentID), method: request.method, params: forwarded.params)))
        } catch {
            if case .client(let route) = routes.remove(agentID) {
                complete(route, outcome: .failure(BridgeErrors.agentGone(error.description)))
            }
        }
    }

    /// Delivers the agent's answer to the client that asked, in its dialect, and keeps session membership right.
    func complete(_ route: ClientRoute, outcome: Result<JSONValue, JSONRPCError>) {
        BridgeMetrics.relayLatency.record(duration: configuration.clock.now - route.started)
        defer { BridgeMetrics.sessions.record(sessions.count) }
        if route.method == ACPMethod.sessionPrompt, route.idempotencyKey != nil {
            settlePrompt(session: route.sessionID, key: route.idempotencyKey, outcome: outcome)
        }
        guard let client = connections[route.connection] else {
            if route.method == ACPMethod.sessionPrompt, let session = route.sessionID {
                promptEndedAway(session: session, outcome: outcome)
            }
            return
        }
        if route.method == ACPMethod.sessionPrompt, let session = route.sessionID {
            // Other attached clients (a phone that resumed on a new connection while the old one is
            // not yet known to be dead, a second phone) learn that the turn ended too.
            announcePromptEnd(session: session, outcome: outcome, except: route.connection)
        }
        connections[route.connection]?.pending = max(client.pending - 1, 0)
        var outcome = outcome
        switch (route.method, outcome) {
        case (ACPMethod.sessionNew, .success(let result)), (ACPMethod.sessionFork, .success(let result)):
            if let session = result["sessionId"]?.stringValue, let files = route.files {
                registerSession(session, files: files, additional: route.additional, result: result, requester: route.connection)
            }
        case (ACPMethod.sessionNew, .failure), (ACPMethod.sessionFork, .failure):
            if !routes.sessionBeingCreated { sessions.creationsSettled() }
        case (ACPMethod.sessionLoad, .success(let result)), (ACPMethod.sessionResume, .success(let result)):
            if let session = route.sessionID {
                keepState(of: session, from: result)
                keepAgentMeta(of: session, from: result)
                outcome = .success(withBridgeMeta(result, session: session))
            }
        case (ACPMethod.sessionLoad, .failure), (ACPMethod.sessionResume, .failure):
            if let session = route.sessionID {
                detach(route.connection, from: session)
                sessions.closeIfUnattached(session)
            }
        case (ACPMethod.sessionList, _):
            outcome = listWithKept(outcome, params: route.requested)
        case (ACPMethod.sessionClose, .success), (ACPMethod.sessionDelete, .success):
            if let session = route.sessionID { dropSession(session, by: route.method, requester: route.connection) }
        case (ACPMethod.sessionSetMode, .success(let result)), (ACPMethod.sessionSetModel, .success(let result)),
             (ACPMethod.sessionSetConfigOption, .success(let result)):
            keepChoice(route, result: result)
        default:
            break
        }
        // The agent's error (its data is free-form) goes as it came; a result in the client's spelling.
        var converted = outcome
        if case .success(let value) = outcome, let dialect = client.dialect, !BridgeHub.isExtension(route.method) {
            do throws(ACPKeyCollision) {
                converted = .success(try dialect.checkedToClient(value))
            } catch {
                client.logger.warning("the agent's answer has keys that collide in the client's dialect", metadata: ["method": "\(route.method)", "collision": "\(error)"])
                converted = .failure(error.rpcError(fromClient: false))
            }
        }
        deliver(JSONRPCResponse(id: route.clientID, outcome: converted), to: route.connection, batch: route.batch)
    }

    // MARK: answers to agent requests

    /// A client answered a request the agent sent through the bridge: the first success wins.
    ///
    /// An error waits while another client asked may still answer; once every client asked has failed, the agent
    /// gets the last error.
    private func clientAnswered(_ response: JSONRPCResponse, from id: ConnectionID) {
        guard case .int(let askID) = response.id, let ask = asks.asked(askID, of: id) else {
            connections[id]?.logger.debug("response to nothing pending (already answered?)", metadata: ["id": "\(response.id)"])
            return
        }
        // A phone's error (its data is free-form) goes as it came; a result in official spelling (an elicitation's
        // `content` is the user's data, an extension's result free-form).
        var outcome = response.outcome
        if case .success(let value) = response.outcome, let dialect = connections[id]?.dialect, !BridgeHub.isExtension(ask.method) {
            do throws(ACPKeyCollision) {
                outcome = .success(try dialect.checkedToAgent(value, keeping: ask.method == ACPMethod.elicitationCreate ? ["content"] : []))
            } catch {
                outcome = .failure(error.rpcError(fromClient: true))
            }
        }
        guard case .settled(let settled, let others) = asks.answer(askID, from: id, outcome: outcome) else {
            connections[id]?.logger.debug("a client failed the agent's request; others may still answer", metadata: ["method": "\(ask.method)"])
            return
        }
        for other in others {
            notify(other, method: ACPMethod.requestAnswered, params: ["requestId": .int(askID), "sessionId": .string(ask.sessionID)])
        }
        guard case .running(let handle) = agentLink.state, handle.generation == settled.generation else { return }
        try? handle.agent.send(.response(JSONRPCResponse(id: settled.agentRequestID, outcome: outcome)))
    }
}
