import BridgeRPC
import BridgeSessionStore
import BridgeTime
import BridgeWorkspace
import Foundation
import Logging
import NIOCore

extension BufferedUpdate: SessionStorePayload {
    /// The update's text for the store: the very frame official clients got, or its params.
    var storedText: String {
        if let frame { return String(buffer: frame) }
        return params.jsonText
    }
}

/// Sessions kept across restarts (issue 25 item 2): what the hub tells the ``SessionStore`` (queued, written off the
/// relay's path) and the stored sessions it starts with, as dormant records (``SessionState/dormant``).
extension BridgeHub {
    /// The store, when the bridge keeps sessions across restarts.
    var store: SessionStore? { configuration.sessionStore }

    /// Queues the session's row (everything but its updates and keys) for the store.
    func persistSession(_ session: String) {
        guard let store, let record = sessions[session] else { return }
        let now = configuration.clock.wallTime.timeIntervalSince1970
        store.enqueue(.upsertSession(StoredSessionRow(
            id: session, agentSessionId: session, cwd: record.files.root,
            additionalDirectories: JSONValue.array(record.additional.map { .string($0.root) }).jsonText,
            title: record.title, deviceId: record.device, modes: record.modes?.jsonText, models: record.models?.jsonText,
            configOptions: record.configOptions?.jsonText,
            agentMeta: record.agentMeta.isEmpty ? nil : JSONValue.object(record.agentMeta).jsonText,
            nextSeq: record.nextSeq, readOnly: record.state == .readOnly,
            createdAt: record.createdAt > 0 ? record.createdAt : now, updatedAt: now)))
    }

    /// Queues a kept update, and the trim of what the replay buffer let go (`oldestBefore`: its oldest seq before).
    func persistUpdate(_ update: BufferedUpdate, at index: Dictionary<String, SessionRecord>.Index, oldestBefore: Int64?) {
        guard let store else { return }
        let session = sessions.keys[index]
        store.enqueue(.appendUpdate(session: session, seq: update.seq, payload: update))
        let oldest = sessions.values[index].replay.first?.seq
        if oldest != oldestBefore { store.enqueue(.trimUpdates(session: session, before: oldest ?? update.seq + 1)) }
    }

    /// Queues the forgetting of a session (closed, deleted, dropped for retention).
    func forgetStored(_ session: String) {
        store?.enqueue(.deleteSession(session))
    }

    /// Queues an idempotency key with its outcome (`nil` while the prompt runs), and the trim of forgotten keys.
    func persistKey(_ key: String, session: String, position: Int64, outcome: Result<JSONValue, JSONRPCError>?) {
        guard let store else { return }
        store.enqueue(.putKey(StoredPromptKeyRow(sessionId: session, key: key, position: position, outcome: outcome.map(BridgeHub.outcomeText))))
        if let oldest = sessions[session]?.prompts.oldestPosition, position - oldest >= Int64(IdempotencyLedger.capacity) {
            store.enqueue(.trimKeys(session: session, before: oldest))
        }
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

    /// The stored sessions as dormant records: their directories checked again (a session whose directory is gone or
    /// out of scope now is left out, and forgotten), their replay rebuilt, their keys restored (a prompt that ran when
    /// the bridge stopped gets ``BridgeErrors/interrupted(_:)``), idle since their last change.
    static func dormantSessions(
        _ stored: [StoredSession], workspace: WorkspaceFiles, configuration: BridgeServerConfiguration, logger: Logger
    ) -> (sessions: [String: SessionRecord], unusable: [String]) {
        var result: [String: SessionRecord] = [:]
        var unusable: [String] = []
        let now = configuration.clock.now
        let wallNow = configuration.clock.wallTime.timeIntervalSince1970
        for session in stored {
            let row = session.row
            let files: WorkspaceFiles
            var additional: [WorkspaceFiles] = []
            do {
                files = try workspace.session(cwd: row.cwd)
                for path in (try? JSONValue(parsing: row.additionalDirectories))?.arrayValue ?? [] {
                    if let text = path.stringValue { additional.append(try workspace.session(cwd: text)) }
                }
            } catch {
                logger.notice("a stored session's directory cannot be used now; forgetting it", metadata: [
                    "session": "\(row.id)", "cwd": "\(row.cwd)", "error": "\(error.message)"])
                unusable.append(row.id)
                continue
            }
            var record = SessionRecord(files: files, additional: additional, modes: row.modes.flatMap { try? JSONValue(parsing: $0) })
            record.models = row.models.flatMap { try? JSONValue(parsing: $0) }
            record.configOptions = row.configOptions.flatMap { try? JSONValue(parsing: $0) }
            record.agentMeta = row.agentMeta.flatMap { try? JSONValue(parsing: $0) }?.objectValue ?? [:]
            record.title = row.title
            record.device = row.deviceId
            record.createdAt = row.createdAt
            record.state = .dormant
            var nextSeq = row.nextSeq
            for update in session.updates {
                guard let params = storedParams(update.payload) else { continue }
                record.replay.append(BufferedUpdate(seq: update.seq, params: params),
                                     limit: configuration.replayBufferSize, byteLimit: configuration.replayBufferBytes)
                nextSeq = max(nextSeq, update.seq + 1)
            }
            if row.seqReserved >= nextSeq {
                // The bridge did not stop cleanly (a clean stop releases every reservation): the numbers up to the
                // reservation may have reached phones without being stored. None is used again.
                record.unstored = nextSeq...row.seqReserved
                logger.notice("a session kept from a bridge that did not stop cleanly may have lost its newest updates", metadata: [
                    "session": "\(row.id)", "stored_through": "\(nextSeq - 1)", "reserved_through": "\(row.seqReserved)"])
                nextSeq = row.seqReserved + 1
            }
            record.nextSeq = nextSeq
            for key in session.keys {
                let outcome = key.outcome.flatMap(outcome(fromText:)) ?? .failure(BridgeErrors.interrupted(row.id))
                record.prompts.restore(key.key, position: key.position, outcome: outcome)
            }
            let age = max(0, wallNow - row.updatedAt)
            let cap = Double((configuration.retention.idleTimeout ?? .seconds(86_400 * 365)).components.seconds) + 1
            record.idleSince = now - .milliseconds(Int64(min(age, cap) * 1000))
            result[row.id] = record
        }
        return (result, unusable)
    }

    /// A stored update's params: the notification's params when the whole frame was stored, else the text itself.
    static func storedParams(_ payload: String) -> JSONValue? {
        guard let value = try? JSONValue(parsing: payload) else { return nil }
        if value["jsonrpc"] != nil, value["method"] != nil { return value["params"] }
        return value
    }
}
