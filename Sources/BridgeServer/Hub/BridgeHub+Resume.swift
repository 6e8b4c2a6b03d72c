import BridgeACP
import BridgeRPC
import BridgeSessionStore
import Logging
import NIOCore

/// Resume without loss: sequence numbers on `session/update`, the replay buffer, `_oa/session/resume`, and prompts
/// that outlive the connection that sent them.
extension BridgeHub {
    /// Stamps a `session/update` with the session's next sequence number (`params._meta.seq`, other `_meta` keys
    /// kept) and keeps it in the session's replay buffer.
    ///
    /// Updates of sessions the bridge does not know pass unchanged.
    func sequenced(_ notification: JSONRPCNotification, session: String) -> JSONRPCNotification {
        guard var params = notification.params?.objectValue else { return notification }
        var stamped = JSONValue.null
        let appended = sessions.append(to: session) { seq in
            var meta = params["_meta"]?.objectValue ?? [:]
            meta["seq"] = .int(seq)
            // `_meta.oa` marks what the bridge itself recorded (a prompt it relayed): never the agent's to claim.
            meta["oa"] = nil
            params["_meta"] = .object(meta)
            stamped = .object(params)
            return BufferedUpdate(seq: seq, params: stamped)
        }
        guard let appended else { return notification }
        persistAppended(appended, session: session)
        return JSONRPCNotification(method: notification.method, params: stamped)
    }

    /// How many `seq` numbers one reservation covers: with a store, the numbers are reserved in blocks, the next
    /// block asked for when half of the present one is used (``SessionTable/append(to:_:)``), so the reservation is
    /// written (within the store's 100 ms batches) before its numbers are reached; a restore after a crash numbers
    /// from past it (``dormantSessions``).
    static let seqReservationBlock: Int64 = 1024

    /// Relays a `session/update` whose params came as bytes without `_meta` (``JSONRPCNotification/rawParams``):
    /// official clients and the replay buffer get one frame made of the agent's bytes with `_meta.seq` spliced in
    /// (``SplicedUpdate``: no stamping of the parsed value, no encoding, the byte count known); seed clients get the
    /// stamped params converted, as ``sequenced(_:session:)`` makes them.
    ///
    /// Returns `false`, having done nothing, when the update cannot go so (then it takes that path).
    func relaySpliced(_ notification: JSONRPCNotification, session: String) -> Bool {
        guard let raw = notification.rawParams, var params = notification.params?.objectValue, params["_meta"] == nil,
              sessions.contains(session), raw.isForwardable else { return false }
        var frame = ByteBuffer()
        let appended = sessions.append(to: session) { seq in
            let (spliced, paramsBytes) = SplicedUpdate.frame(seq: seq, params: raw)
            frame = spliced
            return BufferedUpdate(seq: seq, frame: spliced, paramsBytes: paramsBytes)
        }
        guard let appended else { return false }
        persistAppended(appended, session: session)
        let seq = appended.update.seq
        let members = appended.members
        if members.isEmpty {
            logger.debug("update for a session nobody is attached to", metadata: ["session": "\(session)", "method": "\(notification.method)"])
        }
        var seedMembers: [ConnectionID] = []
        for id in members {
            guard let dialect = connections[id]?.dialect else { continue }
            if dialect.isSeed {
                seedMembers.append(id)
            } else {
                send(.textBytes(frame), to: id)
            }
        }
        if !seedMembers.isEmpty {
            params["_meta"] = ["seq": .int(seq)]
            notify(seedMembers, method: notification.method, params: .object(params))
        }
        return true
    }

    /// Sends a buffered update to a client: the very frame official clients got when it was kept, else its params in
    /// the client's dialect.
    func replay(_ update: BufferedUpdate, to id: ConnectionID) {
        if let frame = update.frame, connections[id]?.dialect?.isSeed == false {
            send(.textBytes(frame), to: id)
        } else {
            notify(id, method: ACPMethod.sessionUpdate, params: update.params)
        }
    }

    /// A prompt ended after the client that sent it went away: remember the stop reason for resume and tell the
    /// session's attached clients with `_oa/prompt_finished`.
    func promptEndedAway(session: String, outcome: Result<JSONValue, JSONRPCError>) {
        guard sessions.contains(session) else { return }
        defer {
            // Nobody may be attached any more: the session's idle time starts now.
            sessions.resetIdle(session)
            enforceRetention()
        }
        let stopReason: String
        switch outcome {
        case .success(let result): stopReason = result["stopReason"]?.stringValue ?? "end_turn"
        case .failure: stopReason = "error"
        }
        sessions.update(session) { $0.finishedWhileAway = stopReason }
        let members = sessions.members(of: session)
        logger.info("prompt finished while its client was away", metadata: [
            "session": "\(session)", "stopReason": "\(stopReason)", "attached": "\(members.count)",
        ])
        notify(members, method: BridgeMethod.promptFinished, params: ["sessionId": .string(session), "stopReason": .string(stopReason)])
    }

    /// A prompt ended and its requester is still connected: tells the session's other attached
    /// clients with `_oa/prompt_finished`.
    func announcePromptEnd(session: String, outcome: Result<JSONValue, JSONRPCError>, except requester: ConnectionID) {
        guard sessions.contains(session) else { return }
        let members = sessions.members(of: session)
        let stopReason: String
        switch outcome {
        case .success(let result): stopReason = result["stopReason"]?.stringValue ?? "end_turn"
        case .failure: stopReason = "error"
        }
        notify(members.filter { $0 != requester }, method: BridgeMethod.promptFinished, params: ["sessionId": .string(session), "stopReason": .string(stopReason)])
    }

    /// `_oa/session/resume {"sessionId", "lastSeq"}`: attaches the connection, replays the buffered updates after
    /// `lastSeq` in order, asks again what the agent is still waiting on, then answers
    /// `{"lastSeq", "replayed", "promptRunning", "finishedWhileAway"?}`, or the gap error (still attached).
    func resume(_ request: JSONRPCRequest, params: JSONValue?, from id: ConnectionID, batch: UInt64?) -> ReceiveWork? {
        let usage = "\(BridgeMethod.sessionResume) needs {\"sessionId\": string, \"lastSeq\": integer >= 0} (seed dialect: session_id, last_seq)"
        guard let session = params?["sessionId"]?.stringValue, let lastSeq = params?["lastSeq"]?.intValue, lastSeq >= 0 else {
            fail(id, request: request.id, JSONRPCError.invalidParams(usage), batch: batch)
            return nil
        }
        guard let record = sessions[session] else {
            fail(id, request: request.id, droppedError(session) ?? BridgeErrors.unknownSession(session), batch: batch)
            return nil
        }
        if let error = sessionLimitError(id, joining: session) {
            fail(id, request: request.id, error, batch: batch)
            return nil
        }
        if record.state == .dormant {
            // Kept from before a restart: restored first (the agent may have to start), then resumed.
            return .restore(request, params: params, batch: batch)
        }
        attach(id, to: session)
        sessions.resetIdle(session)
        let latest = record.nextSeq - 1
        let oldest = record.replay.first?.seq ?? record.nextSeq
        if lastSeq < latest && lastSeq + 1 < oldest {
            connections[id]?.logger.notice("resume gap", metadata: [
                "session": "\(session)", "requestedAfter": "\(lastSeq)", "oldestSeq": "\(oldest)",
            ])
            askAgain(session, to: id)
            fail(id, request: request.id, BridgeErrors.gap(oldest: oldest, requestedAfter: lastSeq, latest: latest), batch: batch)
            return nil
        }
        var replayed: Int64 = 0
        for update in record.replay where update.seq > lastSeq {
            replay(update, to: id)
            replayed += 1
        }
        askAgain(session, to: id)
        var result: [String: JSONValue] = [
            "lastSeq": .int(latest), "replayed": .int(replayed), "promptRunning": .bool(routes.promptRunning(session)),
        ]
        if let reason = record.finishedWhileAway { result["finishedWhileAway"] = .string(reason) }
        // After a crash the store may have lost updates the phone has not seen (finding F7): said, never skipped over.
        if let lost = record.unstored, lastSeq < lost.upperBound {
            result["lostUpdates"] = ["afterSeq": .int(lost.lowerBound - 1), "throughSeq": .int(lost.upperBound)]
        }
        if let oa = restoreMeta(session) { result["_meta"] = ["oa": oa] }
        connections[id]?.logger.info("session resumed", metadata: [
            "session": "\(session)", "lastSeq": "\(lastSeq)", "replayed": "\(replayed)",
        ])
        let dialect = connections[id]?.dialect
        deliver(JSONRPCResponse(id: request.id, result: dialect?.toClient(.object(result)) ?? .object(result)), to: id, batch: batch)
        return nil
    }

    /// Sends the agent's unanswered requests of `session` (for example `session/request_permission`) to a client that was
    /// not asked yet, under their original ids.
    func askAgain(_ session: String, to id: ConnectionID) {
        guard let dialect = connections[id]?.dialect else { return }
        for (askID, ask) in asks.askAgain(session: session, client: id, canAnswer: { canAnswer($0, id) }) {
            let request = JSONRPCRequest(id: .int(askID), method: ask.method, params: BridgeHub.toClient(ask.params, method: ask.method, dialect: dialect))
            send(.text(JSONRPCMessage.request(request).jsonText), to: id)
        }
    }
}
