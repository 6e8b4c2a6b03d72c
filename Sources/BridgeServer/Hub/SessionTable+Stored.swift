import BridgeRPC
import BridgeSessionStore
import BridgeWorkspace

/// Sessions kept across restarts (issue 25 item 2) as the table reads them back: a stored session as a dormant record,
/// and a prompt's outcome as the store keeps it.
extension SessionTable {
    /// `stored` as a dormant record working in `files` (and `additional`), idle since `idleSince`: its present state,
    /// title and device, its replay rebuilt within `bounds`, its idempotency keys restored (a prompt that ran when the
    /// bridge stopped gets ``BridgeErrors/interrupted(_:)``).
    ///
    /// Numbering goes on after the last stored update; after a bridge that did not stop cleanly (it still held a
    /// reservation), after the reservation: the numbers up to it may have reached phones unstored
    /// (``SessionRecord/unstored``), and none is used again.
    static func dormantRecord(
        _ stored: StoredSession, files: WorkspaceFiles, additional: [WorkspaceFiles], bounds: Bounds, idleSince: ContinuousClock.Instant
    ) -> SessionRecord {
        let row = stored.row
        var record = SessionRecord(files: files, additional: additional, modes: row.modes.flatMap { try? JSONValue(parsing: $0) })
        record.models = row.models.flatMap { try? JSONValue(parsing: $0) }
        record.configOptions = row.configOptions.flatMap { try? JSONValue(parsing: $0) }
        record.agentMeta = row.agentMeta.flatMap { try? JSONValue(parsing: $0) }?.objectValue ?? [:]
        record.title = row.title
        record.device = row.deviceId
        record.createdAt = row.createdAt
        record.state = .dormant
        var nextSeq = row.nextSeq
        for update in stored.updates {
            guard let params = storedParams(update.payload) else { continue }
            record.replay.append(BufferedUpdate(seq: update.seq, params: params), limit: bounds.replayCount, byteLimit: bounds.replayBytes)
            nextSeq = max(nextSeq, update.seq + 1)
        }
        if row.seqReserved >= nextSeq {
            // The bridge did not stop cleanly (a clean stop releases every reservation).
            record.unstored = nextSeq...row.seqReserved
            nextSeq = row.seqReserved + 1
        }
        record.nextSeq = nextSeq
        for key in stored.keys {
            let outcome = key.outcome.flatMap(outcome(fromText:)) ?? .failure(BridgeErrors.interrupted(row.id))
            record.prompts.restore(key.key, position: key.position, outcome: outcome)
        }
        record.idleSince = idleSince
        return record
    }

    /// A stored update's params: the notification's params when the whole frame was stored, else the text itself.
    static func storedParams(_ payload: String) -> JSONValue? {
        guard let value = try? JSONValue(parsing: payload) else { return nil }
        if value["jsonrpc"] != nil, value["method"] != nil { return value["params"] }
        return value
    }

    /// A prompt's outcome as the store keeps it: `{"result": …}` or `{"error": {code, message, data?}}`.
    static func outcomeText(_ outcome: Result<JSONValue, JSONRPCError>) -> String {
        switch outcome {
        case .success(let result): return JSONValue.object(["result": result]).jsonText
        case .failure(let error):
            var members: [String: JSONValue] = ["code": .int(Int64(error.code)), "message": .string(error.message)]
            if let data = error.data { members["data"] = data }
            return JSONValue.object(["error": .object(members)]).jsonText
        }
    }

    /// A stored outcome read back; `nil` for text that is neither.
    static func outcome(fromText text: String) -> Result<JSONValue, JSONRPCError>? {
        guard let value = try? JSONValue(parsing: text) else { return nil }
        if let result = value["result"] { return .success(result) }
        guard let error = value["error"], let code = error["code"]?.intValue, let message = error["message"]?.stringValue else { return nil }
        return .failure(JSONRPCError(code: Int(code), message: message, data: error["data"]))
    }
}
