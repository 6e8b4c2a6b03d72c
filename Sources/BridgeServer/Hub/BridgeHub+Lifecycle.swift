import BridgeACP
import BridgeRPC
import BridgeSessionStore
import BridgeTerminal
import BridgeTime
import BridgeWorkspace
import Foundation
import Logging

/// The session lifecycle beyond `session/new`, from whichever connection: `session/load` and `session/resume` attach
/// the caller (a live session directly, with replay; another one through the agent), `session/fork` registers the new
/// session, `session/close` and `session/delete` drop the bridge's record. Also the present state (modes, models,
/// config options) kept current for clients that attach, and updates the agent sends before it answers.
extension BridgeHub {
    /// The `lastSeq` a client passes in `_meta` of `session/load` / `session/resume` (either spelling: `_meta` is
    /// free-form and never converted).
    static func lastSeq(_ params: JSONValue?) -> Int64? {
        guard let meta = params?["_meta"] else { return nil }
        guard let seq = meta["lastSeq"]?.intValue ?? meta["last_seq"]?.intValue, seq >= 0 else { return nil }
        return seq
    }

    /// `session/load` and `session/resume`: a session this bridge runs is attached to at once (see
    /// ``attachLive(_:session:params:from:batch:)``); another one is registered, the caller attached, and the request
    /// forwarded (the agent replays a loaded session's history as `session/update` before it answers).
    func reattach(_ request: JSONRPCRequest, params: JSONValue?, from id: ConnectionID, batch: UInt64?) async {
        guard let session = params?["sessionId"]?.stringValue else {
            fail(id, request: request.id, JSONRPCError.invalidParams("\(request.method) needs a sessionId"), batch: batch)
            return
        }
        if let error = sessionLimitError(id, joining: session) {
            fail(id, request: request.id, error, batch: batch)
            return
        }
        if sessions.state(of: session) == .dormant, let error = await restoreIfDormant(session) {
            fail(id, request: request.id, error, batch: batch)
            return
        }
        if sessions.contains(session) {
            attachLive(request, session: session, params: params, from: id, batch: batch)
            return
        }
        if let dropped = droppedError(session) {
            fail(id, request: request.id, dropped, batch: batch)
            return
        }
        let handle: AgentHandle
        switch await ensureAgent() {
        case .success(let running): handle = running
        case .failure(let error):
            fail(id, request: request.id, error, batch: batch)
            return
        }
        // The agent may have started meanwhile, and another client loaded the session.
        if sessions.contains(session) {
            attachLive(request, session: session, params: params, from: id, batch: batch)
            return
        }
        if request.method == ACPMethod.sessionLoad, handle.initializeResult["agentCapabilities"]?["loadSession"] != .bool(true) {
            fail(id, request: request.id, JSONRPCError.methodNotFound(
                ACPMethod.sessionLoad, detail: "the agent cannot load sessions, and no live session \(session) exists"), batch: batch)
            return
        }
        var params = params
        let workspace: SessionWorkspace
        do {
            workspace = try sessionWorkspace(&params)
        } catch {
            fail(id, request: request.id, error, batch: batch)
            return
        }
        // Attach first: the agent replays the history as session/update before it answers.
        sessions.open(session, SessionRecord(files: workspace.files, additional: workspace.additional))
        attach(id, to: session)
        await forward(request, params: params, from: id, batch: batch, files: workspace.files, additional: workspace.additional,
                      sessionID: session)
    }

    /// Attaches a client to a session this bridge runs, without asking the agent: replays the buffered updates after
    /// `_meta.lastSeq` (`session/load` without one: every buffered update, the history the bridge holds), asks again
    /// what the agent waits on, and answers with the present modes, models and config options, plus
    /// `_meta: {lastSeq, replayed, promptRunning}`.
    private func attachLive(_ request: JSONRPCRequest, session: String, params: JSONValue?, from id: ConnectionID, batch: UInt64?) {
        attach(id, to: session)
        sessions.resetIdle(session)
        guard let record = sessions[session] else { return }
        let after: Int64? = request.method == ACPMethod.sessionLoad ? (BridgeHub.lastSeq(params) ?? 0) : BridgeHub.lastSeq(params)
        var replayed: Int64 = 0
        if let after {
            for update in record.replay where update.seq > after {
                notify(id, method: ACPMethod.sessionUpdate, params: update.params)
                replayed += 1
            }
        }
        askAgain(session, to: id)
        var result = record.presentState
        // The agent's own `_meta` of its last answer for the session, the bridge's keys merged in (the bridge's win).
        var meta = record.agentMeta
        meta["lastSeq"] = .int(record.nextSeq - 1)
        meta["replayed"] = .int(replayed)
        meta["promptRunning"] = .bool(routes.promptRunning(session))
        // After a crash: the replay lacks what the store lost (issue 25, F7), said as `_oa/session/resume` says it.
        if let lost = record.unstored, let after, after < lost.upperBound {
            meta["lostUpdates"] = ["afterSeq": .int(lost.lowerBound - 1), "throughSeq": .int(lost.upperBound)]
        }
        if let oa = restoreMeta(session) { meta["oa"] = oa }
        result["_meta"] = .object(meta)
        connections[id]?.logger.info("attached to a live session", metadata: [
            "session": "\(session)", "method": "\(request.method)", "replayed": "\(replayed)",
        ])
        guard let dialect = connections[id]?.dialect else {
            deliver(JSONRPCResponse(id: request.id, result: .object(result)), to: id, batch: batch)
            return
        }
        do throws(ACPKeyCollision) {
            // The modes, models and config options are the agent's: never merged in the seed spelling.
            deliver(JSONRPCResponse(id: request.id, result: try dialect.checkedToClient(.object(result))), to: id, batch: batch)
        } catch {
            connections[id]?.logger.warning("the session's present state has keys that collide in the client's dialect", metadata: ["session": "\(session)", "collision": "\(error)"])
            fail(id, request: request.id, error.rpcError(fromClient: false), batch: batch)
        }
    }

    /// Keeps the modes, models and config options an agent's answer carries (`session/new`, `load`, `resume`, `fork`,
    /// `set_config_option`).
    func keepState(of session: String, from result: JSONValue) {
        if sessions.keepState(of: session, from: result) { persistSession(session) }
    }

    /// Keeps what a `session/update` changes: `current_mode_update` and `config_option_update`.
    func keepState(of session: String, update: JSONValue) {
        switch sessions.keepState(of: session, update: update) {
        case .row: persistSession(session)
        case .title(let title): store?.enqueue(.setTitle(session: session, title: title))
        case .mode, .none: break
        }
    }

    /// What a `session/set_mode`, `set_model` or `set_config_option` asks for (kept as current once the agent agrees);
    /// `nil` for other methods.
    static func choice(_ method: String, _ params: JSONValue?) -> JSONValue? {
        switch method {
        case ACPMethod.sessionSetMode: params?["modeId"]
        case ACPMethod.sessionSetModel: params?["modelId"]
        case ACPMethod.sessionSetConfigOption: params?["configId"] ?? .null
        default: nil
        }
    }

    /// After a successful `session/set_mode` or `session/set_model`: the mode or model asked for is current.
    func keepChoice(_ route: ClientRoute, result: JSONValue) {
        guard let session = route.sessionID, sessions.contains(session), let requested = route.requested else { return }
        switch route.method {
        case ACPMethod.sessionSetMode:
            sessions.choose("currentModeId", requested, in: session)
        case ACPMethod.sessionSetModel:
            sessions.choose("currentModelId", requested, in: session)
        case ACPMethod.sessionSetConfigOption:
            keepState(of: session, from: result)
        default:
            break
        }
        persistSession(session)
    }

    /// A new session (`session/new` or `session/fork` answered): registered, its requester attached, and the updates
    /// the agent sent for it before answering delivered (before the answer, as the agent sent them).
    func registerSession(_ session: String, files: WorkspaceFiles, additional: [WorkspaceFiles], result: JSONValue, requester: ConnectionID) {
        var record = SessionRecord(files: files, additional: additional, members: [])
        record.device = connections[requester]?.device
        record.createdAt = configuration.clock.wallTime.timeIntervalSince1970
        let registered = sessions.register(session, record)
        if registered.replacedKept {
            // The agent gave a new session the id of one kept from before a restart (it counts from 1 again): the
            // new one wins, and the old one's stored conversation goes.
            logger.notice("the agent reused the id of a session kept from before a restart; forgetting the old one", metadata: ["session": "\(session)"])
            forgetStored(session)
        }
        keepState(of: session, from: result)
        keepAgentMeta(of: session, from: result)
        persistSession(session)
        attach(requester, to: session)
        if !registered.early.isEmpty {
            logger.debug("delivering updates sent before the session was answered", metadata: [
                "session": "\(session)", "updates": "\(registered.early.count)"])
            for notification in registered.early { relay(notification) }
        }
        if !routes.sessionBeingCreated { sessions.creationsSettled() }
    }

    /// A notification for a session the bridge does not know yet: kept while a `session/new` or `session/fork` is
    /// waiting for its answer (the agent may announce commands or modes first).
    ///
    /// Returns whether it was taken (kept, or dropped past ``SessionTable/maxEarlyUpdates``).
    func keepEarly(_ notification: JSONRPCNotification, session: String) -> Bool {
        let early = sessions.keepEarly(notification, session: session, creating: routes.sessionBeingCreated)
        if early.dropped {
            logger.warning("too many updates before the session was answered; dropping", metadata: ["session": "\(session)"])
        }
        return early.taken
    }

    /// `session/close` or `session/delete` answered: the bridge forgets the session.
    ///
    /// Its other attached clients are told with `_oa/session_closed`; the agent's requests still waiting on it get an
    /// error.
    func dropSession(_ session: String, by method: String, requester: ConnectionID) {
        guard let record = sessions.close(session) else { return }
        forgetStored(session)
        terminals.releaseAll(session: session)
        for member in record.members { connections[member]?.sessions.remove(session) }
        notify(record.members.filter { $0 != requester }, method: BridgeMethod.sessionClosed,
               params: ["sessionId": .string(session), "method": .string(method)])
        for (_, ask) in asks.removeAll(where: { $0.sessionID == session }) {
            answerAgent(ask.agentRequestID, .failure(JSONRPCError.internalError("session \(session) was closed (\(method))")), generation: ask.generation)
        }
        logger.info("session dropped", metadata: ["session": "\(session)", "method": "\(method)", "attached": "\(record.members.count)"])
    }

    /// Whether client `id` can answer a request of the agent: `elicitation/create` only if it advertised
    /// `clientCapabilities.elicitation` in its `initialize`; anything else, yes.
    func canAnswer(_ method: String, _ id: ConnectionID) -> Bool {
        guard method == ACPMethod.elicitationCreate else { return true }
        guard let elicitation = connections[id]?.capabilities?["elicitation"] else { return false }
        return elicitation != .null && elicitation != .bool(false)
    }

    // MARK: free-form data

    /// Whether a method is an extension of someone else's (`_` prefix, not the bridge's own `_oa/`): its params and
    /// results are free-form and never renamed.
    static func isExtension(_ method: String) -> Bool {
        method.hasPrefix("_") && !method.hasPrefix("_oa/")
    }

    /// The agent's params in a client's spelling (an extension method's untouched).
    static func toClient(_ params: JSONValue?, method: String, dialect: ACPDialect) -> JSONValue? {
        guard let params, !isExtension(method) else { return params }
        return dialect.toClient(params)
    }

    /// A client's params in official spelling (an extension method's untouched); colliding keys are -32602.
    static func fromClient(_ params: JSONValue?, method: String, dialect: ACPDialect) throws(JSONRPCError) -> JSONValue? {
        guard let params, !isExtension(method) else { return params }
        do {
            return try dialect.checkedToAgent(params)
        } catch {
            throw error.rpcError(fromClient: true)
        }
    }

    // MARK: $/cancel_request

    /// A client's `$/cancel_request`: its own request id is mapped to the one the agent knows, then passed on.
    func clientCancelledRequest(_ params: JSONValue?, from id: ConnectionID) {
        guard let requested = params?["requestId"].flatMap(JSONRPCID.init) else {
            connections[id]?.logger.notice("$/cancel_request without a requestId")
            return
        }
        guard let (agentID, route) = routes.clientRequest(of: id, id: requested), case .running(let handle) = agentLink.state, handle.generation == route.generation else {
            connections[id]?.logger.debug("$/cancel_request for nothing pending", metadata: ["id": "\(requested)"])
            return
        }
        var forwarded = params?.objectValue ?? [:]
        forwarded["requestId"] = .int(agentID)
        try? handle.agent.send(.notification(JSONRPCNotification(method: ACPMethod.cancelRequest, params: .object(forwarded))))
    }

    /// The agent's `$/cancel_request`: the clients asked get it under their own id, and the request is settled with
    /// error -32800 (a late answer of a client is ignored).
    func agentCancelledRequest(_ params: JSONValue?, generation current: Int) {
        guard let requested = params?["requestId"].flatMap(JSONRPCID.init) else { return }
        for (askID, ask) in asks.removeAll(where: { $0.agentRequestID == requested && $0.generation == current }) {
            notify(ask.targets, method: ACPMethod.cancelRequest, params: ["requestId": .int(askID)])
            answerAgent(ask.agentRequestID, .failure(JSONRPCError(code: ACPMethod.requestCancelledCode, message: "Request cancelled")), generation: current)
        }
    }
}
