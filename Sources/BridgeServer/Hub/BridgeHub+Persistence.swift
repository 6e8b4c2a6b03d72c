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

    /// Queues what numbering and keeping an update asks of the store: the next block of `seq` numbers reserved, the
    /// update, and the trim of what the replay buffer let go.
    func persistAppended(_ appended: SessionTable.Appended, session: String) {
        guard let store else { return }
        if let through = appended.reserveThrough { store.enqueue(.reserveSeq(session: session, through: through)) }
        store.enqueue(.appendUpdate(session: session, seq: appended.update.seq, payload: appended.update))
        if let before = appended.trimBefore { store.enqueue(.trimUpdates(session: session, before: before)) }
    }

    /// Queues the forgetting of a session (closed, deleted, dropped for retention).
    func forgetStored(_ session: String) {
        store?.enqueue(.deleteSession(session))
    }

    /// Queues an idempotency key with its outcome (`nil` while the prompt runs), and the trim of forgotten keys.
    func persistKey(_ key: String, session: String, position: Int64, outcome: Result<JSONValue, JSONRPCError>?) {
        guard let store else { return }
        store.enqueue(.putKey(StoredPromptKeyRow(sessionId: session, key: key, position: position, outcome: outcome.map(SessionTable.outcomeText))))
        if let oldest = sessions[session]?.prompts.oldestPosition, position - oldest >= Int64(IdempotencyLedger.capacity) {
            store.enqueue(.trimKeys(session: session, before: oldest))
        }
    }

    /// The stored sessions as dormant records: their directories checked again (a session whose directory is gone or
    /// out of scope now is left out, and forgotten), their replay rebuilt, their keys restored (a prompt that ran when
    /// the bridge stopped gets ``BridgeErrors/interrupted(_:)``), idle since their last change.
    static func dormantSessions(
        _ stored: [StoredSession], workspace: WorkspaceFiles, bounds: SessionTable.Bounds, configuration: BridgeServerConfiguration,
        logger: Logger
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
            let age = max(0, wallNow - row.updatedAt)
            let cap = Double((configuration.retention.idleTimeout ?? .seconds(86_400 * 365)).components.seconds) + 1
            let record = SessionTable.dormantRecord(
                session, files: files, additional: additional, bounds: bounds, idleSince: now - .milliseconds(Int64(min(age, cap) * 1000)))
            if let unstored = record.unstored {
                // The numbers up to the reservation may have reached phones without being stored. None is used again.
                logger.notice("a session kept from a bridge that did not stop cleanly may have lost its newest updates", metadata: [
                    "session": "\(row.id)", "stored_through": "\(unstored.lowerBound - 1)", "reserved_through": "\(unstored.upperBound)"])
            }
            result[row.id] = record
        }
        return (result, unusable)
    }
}
