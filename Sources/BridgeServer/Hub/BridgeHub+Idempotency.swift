import BridgeACP
import BridgeRPC
import BridgeWorkspace
import Logging

/// `session/prompt` with an idempotency key (issue 25 item 3; Protocol.md "Idempotency key") and on a read-only
/// session; and `session/list` with the sessions the bridge keeps.
extension BridgeHub {
    /// A client's `session/prompt`: refused on a read-only session; with `_meta.oa.idempotencyKey`, a key seen before
    /// is never sent to the agent again (the retry waits for, or gets, the first one's outcome); `_meta.oa` never
    /// reaches the agent.
    func prompt(_ request: JSONRPCRequest, params: JSONValue?, session: String, from id: ConnectionID, batch: UInt64?) -> ReceiveWork? {
        let key: String?
        let stripped: JSONValue?
        do {
            (key, stripped) = try IdempotencyLedger.takeKey(from: params)
        } catch {
            fail(id, request: request.id, error, batch: batch)
            return nil
        }
        let waiter = IdempotencyLedger.Waiter(connection: id, requestID: request.id, batch: batch)
        if let key, let decision = sessions.update(session, { $0.prompts.begin(key, waiter: waiter) }) {
            switch decision {
            case .answer(let outcome):
                connections[id]?.logger.info("prompt retried after it ended: its stored answer", metadata: ["session": "\(session)"])
                deliverOutcome(outcome, to: id, requestID: request.id, batch: batch)
                return nil
            case .wait:
                connections[id]?.logger.info("prompt retried while it runs: waiting for its answer", metadata: ["session": "\(session)"])
                return nil
            case .send(let position):
                if sessions.state(of: session) == .readOnly {
                    // Kept as this key's answer too: a retry gets the same refusal.
                    let refusal = BridgeErrors.readOnly(session)
                    sessions.update(session) { _ = $0.prompts.finish(key, outcome: .failure(refusal)) }
                    persistKey(key, session: session, position: position, outcome: .failure(refusal))
                    fail(id, request: request.id, refusal, batch: batch)
                    return nil
                }
                persistKey(key, session: session, position: position, outcome: nil)
            }
        }
        if sessions.state(of: session) == .readOnly {
            fail(id, request: request.id, BridgeErrors.readOnly(session), batch: batch)
            return nil
        }
        sessions.update(session) { $0.finishedWhileAway = nil }
        recordPrompt(stripped, promptID: request.id, session: session)
        return forwardNow(ForwardedRequest(request: request, params: stripped, batch: batch, sessionID: session, idempotencyKey: key), from: id)
    }

    /// A prompt with a key ended (or failed before it reached the agent): its outcome is kept, and the retries
    /// waiting for it get it.
    func settlePrompt(session: String?, key: String?, outcome: Result<JSONValue, JSONRPCError>) {
        guard let session, let key, let (position, waiters) = sessions.update(session, { $0.prompts.finish(key, outcome: outcome) }) ?? nil
        else { return }
        persistKey(key, session: session, position: position, outcome: outcome)
        for waiter in waiters { deliverOutcome(outcome, to: waiter.connection, requestID: waiter.requestID, batch: waiter.batch) }
    }

    /// Sends an outcome of the agent's (official spelling) to a client: a result in its dialect, an error as it is.
    func deliverOutcome(_ outcome: Result<JSONValue, JSONRPCError>, to id: ConnectionID, requestID: JSONRPCID, batch: UInt64?) {
        var converted = outcome
        if case .success(let value) = outcome, let dialect = connections[id]?.dialect {
            converted = .success((try? dialect.checkedToClient(value)) ?? value)
        }
        deliver(JSONRPCResponse(id: requestID, outcome: converted), to: id, batch: batch)
    }

    /// The agent's `session/list` answer with the sessions the bridge keeps that it did not list (kept from before a
    /// restart, read-only ones marked `_meta.oa.readOnly`); an agent that cannot list gets the bridge's list instead.
    ///
    /// A later page (`cursor`) is the agent's alone.
    func listWithKept(_ outcome: Result<JSONValue, JSONRPCError>, params: JSONValue?) -> Result<JSONValue, JSONRPCError> {
        if let cursor = params?["cursor"], cursor != .null { return outcome }
        var members: [String: JSONValue]
        switch outcome {
        case .success(let result):
            guard let object = result.objectValue else { return outcome }
            members = object
        case .failure(let error) where error.code == JSONRPCError.methodNotFoundCode:
            members = ["sessions": []]
        case .failure:
            return outcome
        }
        var listed = members["sessions"]?.arrayValue ?? []
        let known = Set(listed.compactMap { $0["sessionId"]?.stringValue })
        let cwd = params?["cwd"]?.stringValue
        for (session, record) in sessions.newestFirst where !known.contains(session) {
            if let cwd, cwd != record.files.root { continue }
            var entry: [String: JSONValue] = ["sessionId": .string(session), "cwd": .string(record.files.root)]
            if let title = record.title { entry["title"] = .string(title) }
            if let oa = restoreMeta(session) { entry["_meta"] = ["oa": oa] }
            listed.append(.object(entry))
        }
        members["sessions"] = .array(listed)
        return .success(.object(members))
    }
}
