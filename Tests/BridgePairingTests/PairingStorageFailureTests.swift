import BridgePairing
import Foundation
import GRDB
import Testing

/// The pairing store's failures keep their cause as a value (issue 31 item 5): SQLite's result code as GRDB gives it,
/// errno, or "not a directory"; tests and callers match on those, never on the message's text.
@Suite("Pairing storage failures keep their cause", .tags(.unit))
struct PairingStorageFailureTests {
    let temporary = TemporaryDirectory()

    @Test("a file that is not a SQLite database: open fails with SQLITE_NOTADB")
    func notADatabase() throws {
        defer { temporary.cleanUp() }
        try FileManager.default.createDirectory(at: temporary.stateDirectory, withIntermediateDirectories: true)
        let database = temporary.stateDirectory.appendingPathComponent(TokenStore.databaseFileName)
        try Data(repeating: 0x41, count: 4096).write(to: database)
        let error = #expect(throws: PairingError.self) { try TokenStore(directory: temporary.stateDirectory) }
        guard case .storage(let failure) = error else {
            Issue.record("expected a storage failure, got \(String(describing: error))")
            return
        }
        #expect(failure.action == .open && failure.path == database.path)
        #expect(failure.resultCode == .SQLITE_NOTADB)
        #expect(error?.httpStatus == 500 && error?.code == "storage_error")
    }

    @Test("a write while another connection holds the database: SQLITE_BUSY, and the store works once it is free")
    func busyWrite() async throws {
        defer { temporary.cleanUp() }
        let store = try TokenStore(directory: temporary.stateDirectory, configuration: TokenStoreConfiguration(busyTimeout: 0.05))
        let database = temporary.stateDirectory.appendingPathComponent(TokenStore.databaseFileName)
        var holding = Configuration()
        holding.allowsUnsafeTransactions = true  // the lock is held across two accesses, on purpose
        let other = try DatabaseQueue(path: database.path, configuration: holding)
        try await other.writeWithoutTransaction { db in try db.execute(sql: "BEGIN EXCLUSIVE") }
        let error = await #expect(throws: PairingError.self) { _ = try await store.issuePairingToken() }
        guard case .storage(let failure) = error else {
            Issue.record("expected a storage failure, got \(String(describing: error))")
            return
        }
        #expect(failure.action == .write && failure.resultCode == .SQLITE_BUSY)
        #expect(failure.path == database.path)
        try await other.writeWithoutTransaction { db in try db.execute(sql: "ROLLBACK") }
        _ = try await store.issuePairingToken()
    }

    @Test("a state directory that is a file: createDirectory, notADirectory (the message says what, not which flag)")
    func notADirectory() throws {
        defer { temporary.cleanUp() }
        let file = temporary.url.appendingPathComponent("not-a-dir")
        try Data("x".utf8).write(to: file)
        let error = #expect(throws: PairingError.self) { try TokenStore(directory: file) }
        #expect(error == .storage(PairingStorageFailure(.createDirectory, path: file.path, cause: .notADirectory)))
        #expect(error?.message.contains("--") == false)
    }
}
