import BridgeRPC

/// The sessions the hub keeps, and their rules: a session is created live (`session/new`, `fork`, a `load` the agent
/// answers), loaded dormant from the store, restored live or read-only, closed; its updates are numbered (`_meta.seq`,
/// reserved in blocks when a store keeps them) and kept for replay; idle ones are dropped past the retention bounds
/// (and remembered as dropped); notifications for a session being created wait until it is; when the agent goes,
/// live sessions wait dormant for the next one.
///
/// A value with no side effects: each change returns what the hub then has to do (write to the store, tell clients,
/// close in the agent), so every rule is tested without a bridge (`HubSessionTableTests`). The records' descriptive
/// fields (modes, models, title, the agent's `_meta`) are changed through ``update(_:_:)``.
struct SessionTable {
    /// How updates are numbered and how many a session keeps for replay.
    struct Bounds: Sendable, Equatable {
        /// The most updates a session's replay buffer keeps.
        var replayCount: Int
        /// The most bytes of params a session's replay buffer keeps.
        var replayBytes: Int
        /// Whether a store keeps the sessions: `seq` numbers are then reserved in blocks of ``reservationBlock``.
        var reservesSeqs: Bool
        /// How many `seq` numbers one reservation covers.
        var reservationBlock: Int64 = 1024
    }

    /// An update numbered and kept (``append(to:_:)``).
    struct Appended {
        /// The update as kept.
        let update: BufferedUpdate
        /// When the next block of numbers must be reserved in the store: through this `seq`.
        let reserveThrough: Int64?
        /// When the replay buffer let go of older updates: the store drops those before this `seq`.
        let trimBefore: Int64?
        /// The connections attached to the session, which get the update.
        let members: Set<ConnectionID>
    }

    /// What a new session's registration replaced and brings (``register(_:_:)``).
    struct Registered {
        /// A session kept from before a restart (dormant or read-only) had the same id: its stored conversation goes.
        let replacedKept: Bool
        /// The notifications the agent sent for it before it answered, in order: delivered now.
        let early: [JSONRPCNotification]
    }

    /// A session dropped for retention (``prune(at:retention:busy:)``).
    struct Retired {
        let session: String
        let record: SessionRecord
        let reason: RetentionReason
        let idleFor: Duration
    }

    /// What ``prune(at:retention:busy:)`` dropped, and when the longest idle session left reaches the idle timeout.
    struct Pruned {
        /// The sessions dropped, the longest idle first.
        var retired: [Retired] = []
        /// When the next one is due (`nil`: none can be).
        var nextDue: ContinuousClock.Instant?
    }

    /// What a restore's answer from the agent does to a dormant session (``restoreAnswered(_:succeeded:shuttingDown:)``).
    enum RestoreOutcome: Equatable {
        /// The session was dropped meanwhile.
        case gone
        /// It is not dormant any more (another path restored it): nothing to change.
        case unchanged
        /// The bridge is shutting down: a load cut short says nothing about the agent; it stays dormant.
        case stillDormant
        /// The agent took it back: live.
        case live
        /// The agent refused it: read-only.
        case readOnly
    }

    /// What an agent's update changed of what the bridge keeps (``keepState(of:update:)``).
    enum StateChange: Equatable {
        /// Nothing to write.
        case none
        /// The session's row changed (its config options).
        case row
        /// Its title changed (at most 1024 characters).
        case title(String)
        /// Its mode changed (not written: the next row write carries it).
        case mode
    }

    /// The most notifications kept for one session the agent has not answered `session/new` / `fork` for yet.
    static let maxEarlyUpdates = 1000

    /// The bounds the updates are numbered and kept in.
    let bounds: Bounds
    private var records: [String: SessionRecord] = [:]
    /// Notifications the agent sent for sessions it has not answered `session/new` / `session/fork` for yet.
    private var early: [String: [JSONRPCNotification]] = [:]
    /// Sessions dropped for retention, so a resume of one gets a clear error.
    private var dropped = RetentionTombstones()
    /// Dormant sessions being restored: a second client waits for the same restore.
    private var restores: [String: Task<JSONRPCError?, Never>] = [:]

    /// An empty table whose updates are numbered and kept within `bounds`.
    init(bounds: Bounds) {
        self.bounds = bounds
    }

    /// How many sessions are kept.
    var count: Int { records.count }

    /// Whether no session is kept.
    var isEmpty: Bool { records.isEmpty }

    /// The kept sessions' ids, in no order.
    var ids: Dictionary<String, SessionRecord>.Keys { records.keys }

    /// The kept sessions with their records, newest first (by `createdAt`).
    var newestFirst: [(session: String, record: SessionRecord)] {
        records.sorted { $0.value.createdAt > $1.value.createdAt }.map { (session: $0.key, record: $0.value) }
    }

    /// The record of `session` (a copy: read what you need).
    subscript(session: String) -> SessionRecord? { records[session] }

    // The readers below go through the index: one field is read in place, the record is not copied out (they run
    // for every update the agent sends).

    /// Whether `session` is kept.
    func contains(_ session: String) -> Bool { records.index(forKey: session) != nil }

    /// Where `session` stands with the running agent; `nil` when it is not kept.
    func state(of session: String) -> SessionState? {
        records.index(forKey: session).map { records.values[$0].state }
    }

    /// The connections attached to `session` (empty when it is not kept).
    func members(of session: String) -> Set<ConnectionID> {
        records.index(forKey: session).map { records.values[$0].members } ?? []
    }

    /// The `seq` of the last update of `session` (0 before the first).
    func lastSeq(of session: String) -> Int64? {
        records.index(forKey: session).map { records.values[$0].nextSeq - 1 }
    }

    /// Changes the descriptive fields of `session`'s record in place (never its state, members, numbering or replay:
    /// those follow the table's rules).
    ///
    /// Returns `nil` when it is not kept.
    @discardableResult
    mutating func update<R>(_ session: String, _ body: (inout SessionRecord) -> R) -> R? {
        guard let index = records.index(forKey: session) else { return nil }
        return body(&records.values[index])
    }

    // MARK: Creating and closing

    /// The agent answered `session/new` or `session/fork` with `session`: it is live, attached to nobody yet; a kept
    /// session of the same id (the agent counts from 1 again after a restart) is replaced, and a retention drop of it
    /// forgotten.
    ///
    /// Returns the notifications that waited for it.
    mutating func register(_ session: String, _ record: SessionRecord) -> Registered {
        let replacedKept = records[session].map { $0.state != .live } ?? false
        var record = record
        record.state = .live
        records[session] = record
        dropped.remove(session)
        return Registered(replacedKept: replacedKept, early: early.removeValue(forKey: session) ?? [])
    }

    /// A `session/load` or `session/resume` of a session the bridge does not keep goes to the agent: the session is
    /// kept live at once (its history replay arrives before the answer).
    ///
    /// Does nothing if it is kept already.
    mutating func open(_ session: String, _ record: SessionRecord) {
        guard records[session] == nil else { return }
        var record = record
        record.state = .live
        records[session] = record
    }

    /// The stored sessions of the last run: kept dormant until a client attaches (a session kept already stays).
    mutating func load(_ stored: [String: SessionRecord]) {
        for (session, record) in stored where records[session] == nil {
            var record = record
            record.state = .dormant
            record.members = []
            records[session] = record
        }
    }

    /// `session/close` or `session/delete` answered, or a load the agent refused: the session is forgotten (not as
    /// dropped).
    ///
    /// Returns its record.
    @discardableResult
    mutating func close(_ session: String) -> SessionRecord? {
        early[session] = nil
        return records.removeValue(forKey: session)
    }

    /// Forgets `session` if nobody is attached to it (a load or resume that failed).
    ///
    /// Returns whether it was forgotten.
    @discardableResult
    mutating func closeIfUnattached(_ session: String) -> Bool {
        guard records[session]?.members.isEmpty == true else { return false }
        close(session)
        return true
    }

    // MARK: Attaching

    /// Attaches connection `id` to `session`; returns how many are attached (`nil` when it is not kept).
    @discardableResult
    mutating func attach(_ id: ConnectionID, to session: String) -> Int? {
        update(session) { record in
            record.members.insert(id)
            return record.members.count
        }
    }

    /// Detaches connection `id` from `session`.
    mutating func detach(_ id: ConnectionID, from session: String) {
        update(session) { $0.members.remove(id) }
    }

    // MARK: Restoring

    /// The restore of `session` under way, to wait for.
    func restoreUnderWay(_ session: String) -> Task<JSONRPCError?, Never>? { restores[session] }

    /// Notes the restore of `session` under way (`nil`: it ended).
    mutating func setRestore(_ session: String, _ task: Task<JSONRPCError?, Never>?) {
        restores[session] = task
    }

    /// The agent answered the restore (`session/load` or `session/resume`) of `session`: if it is still dormant it is
    /// live when the agent took it, read-only when it refused; a restore cut short by the shutdown leaves it dormant
    /// (the next bridge restores it).
    mutating func restoreAnswered(_ session: String, succeeded: Bool, shuttingDown: Bool) -> RestoreOutcome {
        guard let state = records[session]?.state else { return .gone }
        guard state == .dormant else { return .unchanged }
        if shuttingDown { return .stillDormant }
        if succeeded {
            update(session) { $0.state = .live }
            return .live
        }
        update(session) { $0.state = .readOnly }
        return .readOnly
    }

    /// The agent cannot take `session` back (it can neither load nor resume): it is read-only, unless it is no longer
    /// dormant.
    ///
    /// Returns whether it changed.
    @discardableResult
    mutating func markReadOnly(_ session: String) -> Bool {
        guard records[session]?.state == .dormant else { return false }
        update(session) { $0.state = .readOnly }
        return true
    }

    /// The agent is gone: nobody is attached any more, live sessions wait dormant for the next agent (read-only ones
    /// stay read-only), and the notifications kept for sessions being created go.
    mutating func agentGone() {
        early.removeAll()
        for index in records.indices {
            records.values[index].members.removeAll()
            if records.values[index].state == .live { records.values[index].state = .dormant }
        }
    }

    // MARK: Updates

    /// Numbers the next update of `session` and keeps it for replay: `make` builds it from its `seq`.
    ///
    /// With a store, numbers are reserved in blocks, the next asked for when half of the present one is used. `nil`
    /// when the session is not kept.
    mutating func append(to session: String, _ make: (Int64) -> BufferedUpdate) -> Appended? {
        guard let index = records.index(forKey: session) else { return nil }
        let seq = records.values[index].nextSeq
        records.values[index].nextSeq += 1
        var reserveThrough: Int64?
        if bounds.reservesSeqs, seq + bounds.reservationBlock / 2 >= records.values[index].seqReserved {
            reserveThrough = seq + bounds.reservationBlock
            records.values[index].seqReserved = seq + bounds.reservationBlock
        }
        let update = make(seq)
        let oldestBefore = records.values[index].replay.first?.seq
        records.values[index].replay.append(update, limit: bounds.replayCount, byteLimit: bounds.replayBytes)
        let oldest = records.values[index].replay.first?.seq
        let trimBefore = oldest == oldestBefore ? nil : oldest ?? seq + 1
        return Appended(update: update, reserveThrough: reserveThrough, trimBefore: trimBefore, members: records.values[index].members)
    }

    // MARK: Present state

    /// Keeps the modes, models and config options an agent's answer carries (`session/new`, `load`, `resume`, `fork`,
    /// `set_config_option`).
    ///
    /// Returns whether the session is kept (its row is then written).
    @discardableResult
    mutating func keepState(of session: String, from result: JSONValue) -> Bool {
        guard let index = records.index(forKey: session) else { return false }
        if let modes = result["modes"], modes != .null { records.values[index].modes = modes }
        if let models = result["models"], models != .null { records.values[index].models = models }
        if let options = result["configOptions"], options != .null { records.values[index].configOptions = options }
        return true
    }

    /// Keeps what a `session/update` changes: `current_mode_update`, `config_option_update`, `session_info_update`.
    mutating func keepState(of session: String, update: JSONValue) -> StateChange {
        self.update(session) { record -> StateChange in
            switch update["sessionUpdate"]?.stringValue {
            case "current_mode_update":
                guard let mode = update["currentModeId"] else { return .none }
                record.modes = SessionTable.setting("currentModeId", to: mode, in: record.modes)
                return .mode
            case "config_option_update":
                if let options = update["configOptions"] { record.configOptions = options }
                return .row
            case "session_info_update":
                // The title travels with the session across restarts (the agent's words: kept as text, shown as text).
                guard let title = update["title"]?.stringValue.map({ String($0.prefix(1024)) }), title != record.title else { return .none }
                record.title = title
                return .title(title)
            default:
                return .none
            }
        } ?? .none
    }

    /// After a successful `session/set_mode` or `session/set_model`: `requested` is the current mode or model.
    mutating func choose(_ key: String, _ requested: JSONValue, in session: String) {
        update(session) { (record: inout SessionRecord) -> Void in
            switch key {
            case "currentModeId": record.modes = SessionTable.setting(key, to: requested, in: record.modes)
            case "currentModelId": record.models = SessionTable.setting(key, to: requested, in: record.models)
            default: break
            }
        }
    }

    /// `state` (an object, or nothing yet) with `key` set to `value`.
    static func setting(_ key: String, to value: JSONValue, in state: JSONValue?) -> JSONValue {
        var members = state?.objectValue ?? [:]
        members[key] = value
        return .object(members)
    }

    // MARK: Early updates

    /// A notification for `session`, not kept yet: kept while a `session/new` or `session/fork` waits for its answer
    /// (`creating`), at most ``maxEarlyUpdates`` per session (more are dropped).
    ///
    /// Returns whether it was taken (kept or dropped), and whether it was dropped.
    mutating func keepEarly(_ notification: JSONRPCNotification, session: String, creating: Bool) -> (taken: Bool, dropped: Bool) {
        guard creating, records[session] == nil else { return (false, false) }
        guard early[session, default: []].count < SessionTable.maxEarlyUpdates else { return (true, true) }
        early[session, default: []].append(notification)
        return (true, false)
    }

    /// No `session/new` or `session/fork` waits any more: what was kept for sessions never created goes.
    mutating func creationsSettled() {
        early.removeAll()
    }

    /// How many notifications wait for `session` to be created.
    func earlyCount(_ session: String) -> Int { early[session]?.count ?? 0 }

    // MARK: Retention

    /// `session` is in use again (a client attached, a prompt ended): its idle time starts afresh when it is next idle.
    mutating func resetIdle(_ session: String) {
        update(session) { $0.idleSince = nil }
    }

    /// Notes which sessions are idle (nobody attached, not in `busy`) since `now`, then drops the longest idle first:
    /// those idle for ``SessionRetention/idleTimeout``, then as many as it takes to be within
    /// ``SessionRetention/maxIdleSessions`` and ``SessionRetention/maxIdleReplayBytes``.
    ///
    /// A dropped session is remembered as dropped (``droppedReason(_:)``), and what waited for its creation goes.
    mutating func prune(at now: ContinuousClock.Instant, retention: SessionRetention, busy: Set<String>) -> Pruned {
        var idle: [(since: ContinuousClock.Instant, session: String, bytes: Int)] = []
        for index in records.indices {
            let session = records.keys[index]
            if records.values[index].members.isEmpty && !busy.contains(session) {
                if records.values[index].idleSince == nil { records.values[index].idleSince = now }
                idle.append((records.values[index].idleSince ?? now, session, records.values[index].replay.byteCount))
            } else {
                records.values[index].idleSince = nil
            }
        }
        idle.sort { ($0.since, $0.session) < ($1.since, $1.session) }
        var pruned = Pruned()
        var remaining = idle[...]
        if let timeout = retention.idleTimeout {
            while let oldest = remaining.first, now - oldest.since >= timeout {
                retire(oldest.session, .idleTimeout, idleFor: now - oldest.since, into: &pruned)
                remaining = remaining.dropFirst()
            }
        }
        let maxCount = max(retention.maxIdleSessions, 0)
        var count = remaining.count
        var bytes = remaining.reduce(0) { $0 + $1.bytes }
        while let oldest = remaining.first, count > maxCount || bytes > retention.maxIdleReplayBytes {
            retire(oldest.session, count > maxCount ? .maxIdleSessions : .maxIdleReplayBytes, idleFor: now - oldest.since, into: &pruned)
            count -= 1
            bytes -= oldest.bytes
            remaining = remaining.dropFirst()
        }
        if let timeout = retention.idleTimeout, let oldest = remaining.first { pruned.nextDue = oldest.since + timeout }
        return pruned
    }

    private mutating func retire(_ session: String, _ reason: RetentionReason, idleFor: Duration, into pruned: inout Pruned) {
        guard let record = records.removeValue(forKey: session) else { return }
        dropped.insert(session, reason: reason)
        early[session] = nil
        pruned.retired.append(Retired(session: session, record: record, reason: reason, idleFor: idleFor))
    }

    /// Why `session` was dropped for retention, or `nil` if it was not (or that is forgotten).
    func droppedReason(_ session: String) -> RetentionReason? {
        dropped.reason(for: session)
    }
}
