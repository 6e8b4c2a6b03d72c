import BridgeSessionStore
import Foundation
import GRDB
import Testing

extension Tag {
    /// In-process only (a temporary directory, no sockets, no other programs).
    @Tag static var unit: Self
}

/// Writes `sql` into the SQLite file at `path` on a connection of its own (GRDB's, in the test's process), closed
/// before it returns: the database another program (or an older bridge) left behind.
private func writeDatabase(at path: String, _ sql: String) throws {
    let queue = try DatabaseQueue(path: path)
    try queue.writeWithoutTransaction { db in try db.execute(sql: sql) }
    try queue.close()
}

/// A temporary state directory, removed at the end.
private func withDirectory<T>(_ body: (URL) async throws -> T) async throws -> T {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("session-store-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: url) }
    return try await body(url)
}

private func row(_ id: String, nextSeq: Int64 = 1) -> StoredSessionRow {
    StoredSessionRow(id: id, agentSessionId: id, cwd: "/work/\(id)", title: nil, deviceId: "phone-1", nextSeq: nextSeq, createdAt: 1, updatedAt: 1)
}

@Suite("Session store", .tags(.unit))
struct SessionStoreTests {
    @Test("sessions, updates and keys written in a batch are there after reopening")
    func roundTrip() async throws {
        try await withDirectory { directory in
            let store = try SessionStore(directory: directory)
            #expect(store.recovery == nil)
            store.enqueue(.upsertSession(row("s1")))
            for seq in Int64(1)...5 {
                store.enqueue(.appendUpdate(session: "s1", seq: seq, payload: "{\"n\":\(seq)}"))
            }
            store.enqueue(.setTitle(session: "s1", title: "Fix the build"))
            store.enqueue(.putKey(StoredPromptKeyRow(sessionId: "s1", key: "k1", position: 1, outcome: "{\"result\":{}}")))
            #expect(try await store.flush() == 8)
            let reopened = try SessionStore(directory: directory)
            let sessions = try reopened.load()
            #expect(sessions.count == 1)
            #expect(sessions[0].row.title == "Fix the build")
            #expect(sessions[0].row.deviceId == "phone-1")
            #expect(sessions[0].row.nextSeq == 6)
            #expect(sessions[0].updates.map(\.seq) == [1, 2, 3, 4, 5])
            #expect(sessions[0].updates[2].payload == "{\"n\":3}")
            #expect(sessions[0].keys.map(\.key) == ["k1"])
        }
    }

    @Test("updates the replay let go are dropped, and never written when trimmed in the same batch")
    func trimming() async throws {
        try await withDirectory { directory in
            let store = try SessionStore(directory: directory)
            store.enqueue(.upsertSession(row("s1")))
            for seq in Int64(1)...10 { store.enqueue(.appendUpdate(session: "s1", seq: seq, payload: "{}")) }
            store.enqueue(.trimUpdates(session: "s1", before: 4))
            try await store.flush()
            for seq in Int64(11)...12 { store.enqueue(.appendUpdate(session: "s1", seq: seq, payload: "{}")) }
            store.enqueue(.trimUpdates(session: "s1", before: 9))
            try await store.flush()
            let sessions = try store.load()
            #expect(sessions[0].updates.map(\.seq) == [9, 10, 11, 12])
            #expect(sessions[0].row.nextSeq == 13)
        }
    }

    @Test("a deleted session leaves nothing behind; the next seq never goes back")
    func deleteAndSeq() async throws {
        try await withDirectory { directory in
            let store = try SessionStore(directory: directory)
            store.enqueue(.upsertSession(row("s1")))
            store.enqueue(.upsertSession(row("s2")))
            store.enqueue(.appendUpdate(session: "s1", seq: 1, payload: "{}"))
            store.enqueue(.appendUpdate(session: "s2", seq: 7, payload: "{}"))
            store.enqueue(.putKey(StoredPromptKeyRow(sessionId: "s1", key: "k", position: 1, outcome: nil)))
            try await store.flush()
            store.enqueue(.deleteSession("s1"))
            store.enqueue(.upsertSession(row("s2", nextSeq: 2)))
            try await store.flush()
            let sessions = try store.load()
            #expect(sessions.map(\.row.id) == ["s2"])
            #expect(sessions[0].row.nextSeq == 8)
        }
    }

    @Test("a seq reservation is kept, never goes back, and a clean stop releases every one (issue 25, F7)")
    func seqReservation() async throws {
        try await withDirectory { directory in
            let store = try SessionStore(directory: directory)
            store.enqueue(.upsertSession(row("s1")))
            store.enqueue(.upsertSession(row("s2")))
            for seq in Int64(1)...3 { store.enqueue(.appendUpdate(session: "s1", seq: seq, payload: "{}")) }
            store.enqueue(.reserveSeq(session: "s1", through: 1027))
            store.enqueue(.reserveSeq(session: "s1", through: 50))
            store.enqueue(.reserveSeq(session: "gone", through: 9))
            try await store.flush()
            var sessions = try SessionStore(directory: directory).load().sorted { $0.row.id < $1.row.id }
            #expect(sessions.map(\.row.seqReserved) == [1027, 0])
            #expect(sessions[0].row.nextSeq == 4)
            // A later upsert of the row (its other columns) leaves the reservation alone.
            store.enqueue(.upsertSession(row("s1", nextSeq: 4)))
            store.enqueue(.appendUpdate(session: "s1", seq: 4, payload: "{}"))
            store.enqueue(.releaseReservations)
            try await store.flush()
            sessions = try store.load().sorted { $0.row.id < $1.row.id }
            #expect(sessions.map(\.row.seqReserved) == [0, 0])
            #expect(sessions[0].row.nextSeq == 5)
        }
    }

    @Test("a store written before reservations existed (schema v1) opens, its sessions kept, none reserved")
    func schemaV1Migrates() async throws {
        try await withDirectory { directory in
            let file = directory.appendingPathComponent(SessionStore.databaseFileName)
            let schema = """
                PRAGMA application_id = \(SessionStore.applicationID);
                CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
                INSERT INTO grdb_migrations VALUES ('v1');
                CREATE TABLE session (id TEXT PRIMARY KEY NOT NULL, agentSessionId TEXT NOT NULL, cwd TEXT NOT NULL,
                  additionalDirectories TEXT NOT NULL, title TEXT, deviceId TEXT, modes TEXT, models TEXT, configOptions TEXT,
                  agentMeta TEXT, nextSeq INTEGER NOT NULL, readOnly INTEGER NOT NULL, createdAt REAL NOT NULL, updatedAt REAL NOT NULL);
                CREATE TABLE sessionUpdate (sessionId TEXT NOT NULL, seq INTEGER NOT NULL, payload TEXT NOT NULL,
                  PRIMARY KEY (sessionId, seq)) WITHOUT ROWID;
                CREATE TABLE promptKey (sessionId TEXT NOT NULL, key TEXT NOT NULL, position INTEGER NOT NULL, outcome TEXT,
                  PRIMARY KEY (sessionId, key)) WITHOUT ROWID;
                INSERT INTO session VALUES ('old', 'old', '/work/old', '[]', 'Before', NULL, NULL, NULL, NULL, NULL, 8, 0, 1, 1);
                """
            try writeDatabase(at: file.path, schema)
            let store = try SessionStore(directory: directory)
            #expect(store.recovery == nil)
            let sessions = try store.load()
            #expect(sessions.map(\.row.id) == ["old"])
            #expect(sessions[0].row.title == "Before")
            #expect(sessions[0].row.nextSeq == 8)
            #expect(sessions[0].row.seqReserved == 0)
        }
    }

    @Test("a file that is not a database is moved aside, not wiped, and an empty store starts")
    func notADatabase() async throws {
        try await withDirectory { directory in
            let file = directory.appendingPathComponent(SessionStore.databaseFileName)
            let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
            try garbage.write(to: file)
            let store = try SessionStore(directory: directory)
            let recovery = try #require(store.recovery)
            #expect(recovery.path == file.path)
            #expect(recovery.reason.contains("not a SQLite database"))
            #expect(try Data(contentsOf: URL(fileURLWithPath: recovery.movedTo)) == garbage)
            #expect(try store.load().isEmpty)
            store.enqueue(.upsertSession(row("s1")))
            try await store.flush()
            #expect(try SessionStore(directory: directory).recovery == nil)
        }
    }

    @Test("another program's SQLite database is moved aside with a reason that says so")
    func foreignDatabase() async throws {
        try await withDirectory { directory in
            let file = directory.appendingPathComponent(SessionStore.databaseFileName)
            try writeDatabase(at: file.path, "CREATE TABLE notes(x); INSERT INTO notes VALUES ('mine');")
            let original = try Data(contentsOf: file)
            let store = try SessionStore(directory: directory)
            let recovery = try #require(store.recovery)
            #expect(recovery.reason.contains("another program's database"))
            // Moved exactly as it was (not switched to WAL by a look at it).
            #expect(try Data(contentsOf: URL(fileURLWithPath: recovery.movedTo)) == original)
            #expect(try store.load().isEmpty)
        }
    }

    @Test("a damaged database (its pages overwritten) is moved aside")
    func damagedDatabase() async throws {
        try await withDirectory { directory in
            do {
                let store = try SessionStore(directory: directory)
                store.enqueue(.upsertSession(row("s1")))
                for seq in Int64(1)...400 { store.enqueue(.appendUpdate(session: "s1", seq: seq, payload: String(repeating: "x", count: 200))) }
                try await store.flush()
            }
            // Checkpoint into the main file happens when the last connection closes; overwrite its pages after the header.
            let file = directory.appendingPathComponent(SessionStore.databaseFileName)
            for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: file.path + suffix) }
            var bytes = try Data(contentsOf: file)
            #expect(bytes.count > 8192)
            for index in 4096..<bytes.count where index % 3 == 0 { bytes[index] = 0xA5 }
            try bytes.write(to: file)
            let store = try SessionStore(directory: directory)
            let recovery = try #require(store.recovery)
            #expect(FileManager.default.fileExists(atPath: recovery.movedTo))
            #expect(try store.load().isEmpty)
        }
    }
}
