public import BridgeTime
public import Foundation
import GRDB
public import Logging
import Synchronization

/// The bridge's sessions kept across restarts: a SQLite database (WAL) in the state directory, beside the token store.
///
/// The hub never waits for it: it queues changes (``enqueue(_:)``, a lock and an append) and a writer task writes
/// what is queued in one transaction every ``defaultFlushInterval`` (``runWriter(every:clock:)``), skipping updates
/// the replay buffer already let go. A `kill -9` loses at most what was queued since the last write; a committed
/// transaction survives the process (WAL, `synchronous=NORMAL`: only a power cut may lose the last ones).
///
/// A file that is not a SQLite database, a damaged one, or another program's database is moved aside (never deleted)
/// and an empty store started; ``recovery`` says what happened so the bridge reports it at start.
public final class SessionStore: Sendable {
    /// The database's file name in the state directory.
    public static let databaseFileName = "sessions.sqlite"
    /// How often the writer writes what is queued.
    public static let defaultFlushInterval: Duration = .milliseconds(100)
    /// `PRAGMA application_id` of this database ("OABS"): another program's database is told apart by it.
    public static let applicationID: Int32 = 0x4F41_4253

    /// The database file.
    public let databaseURL: URL
    /// What was done with a database that could not be used, if anything.
    public let recovery: SessionStoreRecovery?

    private let pool: DatabasePool
    private let logger: Logger
    /// What the rows' times are read from (a test moves one by hand).
    private let clock: any BridgeClock
    private let pending = Mutex<[SessionStoreChange]>([])

    /// Opens (creating if needed) `sessions.sqlite` in `directory`, which must exist.
    ///
    /// A database that cannot be used is moved aside (see ``recovery``). Throws when even a new database cannot be
    /// made there. Rows are stamped with `clock`'s wall time.
    public init(
        directory: URL, logger: Logger = Logger(label: "oa-bridge.sessions"), clock: any BridgeClock = ContinuousClock()
    ) throws(SessionStoreError) {
        let url = directory.appendingPathComponent(Self.databaseFileName, isDirectory: false)
        databaseURL = url
        self.logger = logger
        self.clock = clock
        switch Self.tryOpen(url) {
        case .success(let opened):
            pool = opened
            recovery = nil
        case .failure(.storage(let failure)):
            throw failure
        case .failure(.unusable(let reason)):
            let movedTo = try Self.moveAside(url, at: clock.wallTime)
            recovery = SessionStoreRecovery(path: url.path, movedTo: movedTo, reason: reason)
            switch Self.tryOpen(url) {
            case .success(let opened): pool = opened
            case .failure(.storage(let failure)): throw failure
            case .failure(.unusable(let again)): throw .storage(path: url.path, reason: again)
            }
        }
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: url.path + suffix) {
            try? FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path + suffix)
        }
    }

    private enum OpenFailure: Error {
        case unusable(String)
        case storage(SessionStoreError)
    }

    private static func tryOpen(_ url: URL) -> Result<DatabasePool, OpenFailure> {
        do {
            return .success(try open(url))
        } catch {
            return .failure(error)
        }
    }

    private static func open(_ url: URL) throws(OpenFailure) -> DatabasePool {
        var config = Configuration()
        config.label = "oa-bridge.sessions"
        config.busyMode = .timeout(10)
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        let pool: DatabasePool
        do {
            // Looked at read-only first: a file that is not ours is moved aside exactly as it was (opening it as a
            // pool would switch it to WAL).
            if let size = (try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? Int, size > 0 {
                var inspect = Configuration()
                inspect.readonly = true
                inspect.label = "oa-bridge.sessions.check"
                do {
                    try check(DatabaseQueue(path: url.path, configuration: inspect))
                } catch let error as DatabaseError where ![.SQLITE_NOTADB, .SQLITE_CORRUPT].contains(error.resultCode) {
                    // Not readable read-only (a WAL database without its -shm file, say): checked through the pool.
                }
            }
            pool = try DatabasePool(path: url.path, configuration: config)
            try check(pool)
            try pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA application_id = \(applicationID)")
            }
            try migrator.migrate(pool)
        } catch let failure as OpenFailure {
            throw failure
        } catch let error as DatabaseError where [.SQLITE_NOTADB, .SQLITE_CORRUPT].contains(error.resultCode) {
            throw .unusable("it is not a SQLite database, or a damaged one (\(error.resultCode))")
        } catch {
            throw .storage(.storage(path: url.path, "cannot open it", error))
        }
        return pool
    }

    /// Throws ``OpenFailure/unusable(_:)`` for a damaged database or another program's.
    private static func check(_ reader: some DatabaseReader) throws {
        let check = try reader.read { db -> (String?, Int32, Int) in
            let quick = try String.fetchOne(db, sql: "PRAGMA quick_check")
            let id = try Int32.fetchOne(db, sql: "PRAGMA application_id") ?? 0
            let tables = try Int.fetchOne(db, sql: """
                SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name != 'grdb_migrations'
                """) ?? 0
            return (quick, id, tables)
        }
        guard check.0 == "ok" else { throw OpenFailure.unusable("the database is damaged (quick_check: \(check.0 ?? "no answer"))") }
        if check.1 != applicationID && (check.1 != 0 || check.2 > 0) {
            throw OpenFailure.unusable("it is another program's database (application_id \(check.1), \(check.2) tables), not oa-bridge's session store")
        }
    }

    /// Renames the database and its `-wal` / `-shm` files to `<name>.unusable-<UTC time>`; returns the new path.
    private static func moveAside(_ url: URL, at time: Date) throws(SessionStoreError) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        var target = url.path + ".unusable-" + formatter.string(from: time)
        var attempt = 1
        while FileManager.default.fileExists(atPath: target) {
            attempt += 1
            target = url.path + ".unusable-" + formatter.string(from: time) + "-\(attempt)"
        }
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: url.path + suffix) {
            do {
                try FileManager.default.moveItem(atPath: url.path + suffix, toPath: target + suffix)
            } catch {
                throw .storage(path: url.path, reason: "it cannot be used and cannot be moved aside to \(target) (\(error.localizedDescription))")
            }
        }
        return target
    }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE session (
                    id TEXT PRIMARY KEY NOT NULL,
                    agentSessionId TEXT NOT NULL,
                    cwd TEXT NOT NULL,
                    additionalDirectories TEXT NOT NULL,
                    title TEXT,
                    deviceId TEXT,
                    modes TEXT,
                    models TEXT,
                    configOptions TEXT,
                    agentMeta TEXT,
                    nextSeq INTEGER NOT NULL,
                    readOnly INTEGER NOT NULL,
                    createdAt REAL NOT NULL,
                    updatedAt REAL NOT NULL
                );
                CREATE TABLE sessionUpdate (
                    sessionId TEXT NOT NULL,
                    seq INTEGER NOT NULL,
                    payload TEXT NOT NULL,
                    PRIMARY KEY (sessionId, seq)
                ) WITHOUT ROWID;
                CREATE TABLE promptKey (
                    sessionId TEXT NOT NULL,
                    key TEXT NOT NULL,
                    position INTEGER NOT NULL,
                    outcome TEXT,
                    PRIMARY KEY (sessionId, key)
                ) WITHOUT ROWID;
                """)
        }
        // Issue 25, finding F7: the highest `seq` a session may have handed out (see ``SessionStoreChange/reserveSeq``).
        migrator.registerMigration("v2-seq-reservation") { db in
            try db.execute(sql: "ALTER TABLE session ADD COLUMN seqReserved INTEGER NOT NULL DEFAULT 0")
        }
        return migrator
    }

    // MARK: Reading

    /// Every stored session with its updates and keys, the most recently changed first.
    public func load() throws(SessionStoreError) -> [StoredSession] {
        do {
            return try pool.write { db in
                // Updates and keys of a session deleted before they were written are not kept.
                try db.execute(sql: "DELETE FROM sessionUpdate WHERE sessionId NOT IN (SELECT id FROM session)")
                try db.execute(sql: "DELETE FROM promptKey WHERE sessionId NOT IN (SELECT id FROM session)")
                let rows = try StoredSessionRow.fetchAll(db, sql: "SELECT * FROM session ORDER BY updatedAt DESC, id")
                var updates: [String: [StoredUpdateRow]] = [:]
                for update in try StoredUpdateRow.fetchAll(db, sql: "SELECT * FROM sessionUpdate ORDER BY sessionId, seq") {
                    updates[update.sessionId, default: []].append(update)
                }
                var keys: [String: [StoredPromptKeyRow]] = [:]
                for key in try StoredPromptKeyRow.fetchAll(db, sql: "SELECT * FROM promptKey ORDER BY sessionId, position") {
                    keys[key.sessionId, default: []].append(key)
                }
                return rows.map { StoredSession(row: $0, updates: updates[$0.id] ?? [], keys: keys[$0.id] ?? []) }
            }
        } catch {
            throw .storage(path: databaseURL.path, "cannot read it", error)
        }
    }

    // MARK: Writing

    /// Queues a change for the next write; never blocks on the database.
    public func enqueue(_ change: SessionStoreChange) {
        pending.withLock { $0.append(change) }
    }

    /// How many changes wait for the next write.
    public var queued: Int { pending.withLock { $0.count } }

    /// Writes what is queued in one transaction; returns how many changes it took.
    ///
    /// On failure the changes are dropped (logged): the bridge keeps running on what it holds in memory. In a
    /// cancelled task nothing is written and nothing dropped: the changes stay queued and it throws
    /// ``SessionStoreError/cancelled``.
    @discardableResult
    public func flush() async throws(SessionStoreError) -> Int {
        let changes = pending.withLock { queue -> [SessionStoreChange] in
            defer { queue.removeAll(keepingCapacity: true) }
            return queue
        }
        guard !changes.isEmpty else { return 0 }
        let now = clock.wallTime.timeIntervalSince1970
        do {
            try await pool.write { db in try Self.apply(changes, at: now, in: db) }
        } catch is CancellationError {
            // GRDB refuses to start a write in a cancelled task (the writer's task at shutdown): nothing was written,
            // so the changes go back to the head of the queue, before anything queued since, for the last write.
            pending.withLock { $0.insert(contentsOf: changes, at: 0) }
            throw .cancelled
        } catch {
            logger.error("could not write the session store", metadata: ["path": "\(databaseURL.path)", "changes": "\(changes.count)", "error": "\(error)"])
            throw .storage(path: databaseURL.path, "write failed", error)
        }
        return changes.count
    }

    /// Writes what is queued every `interval` on `clock` until cancelled, then once more (that last write is not
    /// cancelled).
    public func runWriter(every interval: Duration = SessionStore.defaultFlushInterval, clock: any BridgeClock = ContinuousClock()) async {
        while !Task.isCancelled {
            do {
                try await clock.sleep(for: interval)
            } catch {
                break
            }
            _ = try? await flush()
        }
        // Not cancelled with the task that ran the writer: what is queued at shutdown is written.
        await Task.detached { _ = try? await self.flush() }.value
    }

    private static func apply(_ changes: [SessionStoreChange], at now: Double, in db: Database) throws {
        // The replay's last word per session: updates it already let go are not written at all.
        var trims: [String: Int64] = [:]
        var keyTrims: [String: Int64] = [:]
        for change in changes {
            switch change {
            case .trimUpdates(let session, let before): trims[session] = max(trims[session] ?? .min, before)
            case .trimKeys(let session, let before): keyTrims[session] = max(keyTrims[session] ?? .min, before)
            case .deleteSession(let session):
                trims[session] = nil
                keyTrims[session] = nil
            default: break
            }
        }
        var touched: [String: Int64] = [:]
        let upsert = try db.cachedStatement(sql: """
            INSERT INTO session (id, agentSessionId, cwd, additionalDirectories, title, deviceId, modes, models, configOptions,
                                 agentMeta, nextSeq, readOnly, createdAt, updatedAt)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(id) DO UPDATE SET agentSessionId = excluded.agentSessionId, cwd = excluded.cwd,
                additionalDirectories = excluded.additionalDirectories, title = coalesce(excluded.title, session.title),
                deviceId = coalesce(excluded.deviceId, session.deviceId), modes = excluded.modes, models = excluded.models,
                configOptions = excluded.configOptions, agentMeta = excluded.agentMeta,
                nextSeq = max(session.nextSeq, excluded.nextSeq), readOnly = excluded.readOnly, updatedAt = excluded.updatedAt
            """)
        let append = try db.cachedStatement(sql: "INSERT OR REPLACE INTO sessionUpdate (sessionId, seq, payload) VALUES (?, ?, ?)")
        let putKey = try db.cachedStatement(sql: "INSERT OR REPLACE INTO promptKey (sessionId, key, position, outcome) VALUES (?, ?, ?, ?)")
        for change in changes {
            switch change {
            case .upsertSession(let row):
                try upsert.execute(arguments: [
                    row.id, row.agentSessionId, row.cwd, row.additionalDirectories, row.title, row.deviceId, row.modes, row.models,
                    row.configOptions, row.agentMeta, row.nextSeq, row.readOnly, row.createdAt, now,
                ])
            case .appendUpdate(let session, let seq, let payload):
                touched[session] = max(touched[session] ?? .min, seq)
                if let trim = trims[session], seq < trim { continue }
                try append.execute(arguments: [session, seq, payload.storedText])
            case .setTitle(let session, let title):
                try db.execute(sql: "UPDATE session SET title = ?, updatedAt = ? WHERE id = ?", arguments: [title, now, session])
            case .putKey(let row):
                if let trim = keyTrims[row.sessionId], row.position < trim { continue }
                try putKey.execute(arguments: [row.sessionId, row.key, row.position, row.outcome])
            case .deleteSession(let session):
                touched[session] = nil
                try db.execute(sql: "DELETE FROM sessionUpdate WHERE sessionId = ?", arguments: [session])
                try db.execute(sql: "DELETE FROM promptKey WHERE sessionId = ?", arguments: [session])
                try db.execute(sql: "DELETE FROM session WHERE id = ?", arguments: [session])
            case .reserveSeq(let session, let through):
                try db.execute(sql: "UPDATE session SET seqReserved = max(seqReserved, ?) WHERE id = ?", arguments: [through, session])
            case .releaseReservations:
                try db.execute(sql: "UPDATE session SET seqReserved = 0")
            case .trimUpdates, .trimKeys:
                break
            }
        }
        for (session, trim) in trims {
            try db.execute(sql: "DELETE FROM sessionUpdate WHERE sessionId = ? AND seq < ?", arguments: [session, trim])
        }
        for (session, trim) in keyTrims {
            try db.execute(sql: "DELETE FROM promptKey WHERE sessionId = ? AND position < ?", arguments: [session, trim])
        }
        for (session, last) in touched {
            try db.execute(sql: "UPDATE session SET nextSeq = max(nextSeq, ?), updatedAt = ? WHERE id = ?", arguments: [last + 1, now, session])
        }
    }
}
