import BridgeSessionStore
import Foundation
import Testing

/// A write the shutdown cancels loses nothing: the CI run of 4ae20eb lost a session created 100 ms before a SIGTERM,
/// because the writer's periodic flush took the queue and GRDB refused to write in the cancelled task.
@Suite("Session store under cancellation", .tags(.unit))
struct SessionStoreCancellationTests {
    @Test("a flush in a cancelled task keeps the changes queued, in order, for the next write")
    func cancelledFlushKeepsChanges() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("session-store-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SessionStore(directory: directory)
        store.enqueue(.upsertSession(StoredSessionRow(
            id: "s1", agentSessionId: "s1", cwd: "/work/s1", title: nil, deviceId: nil, nextSeq: 1, createdAt: 1, updatedAt: 1)))
        store.enqueue(.appendUpdate(session: "s1", seq: 1, payload: "{\"n\":1}"))

        let cancelled = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await store.flush()
        }
        await #expect(throws: SessionStoreError.cancelled) { try await cancelled.value }
        #expect(store.queued == 2)

        // Queued after the cancelled write: written after what it kept.
        store.enqueue(.appendUpdate(session: "s1", seq: 2, payload: "{\"n\":2}"))
        #expect(try await store.flush() == 3)
        let sessions = try SessionStore(directory: directory).load()
        #expect(sessions.map(\.row.id) == ["s1"])
        #expect(sessions.first?.updates.map(\.seq) == [1, 2])
    }
}
