import Synchronization

/// The open Streamable HTTP connections, by `Acp-Connection-Id`.
final class StreamableHTTPRegistry: Sendable {
    private let connections = Mutex<[String: StreamableHTTPConnection]>([:])

    /// Adds `connection` under its id.
    func add(_ connection: StreamableHTTPConnection) {
        connections.withLock { $0[connection.id] = connection }
    }

    /// The connection `id`, if open.
    func connection(_ id: String) -> StreamableHTTPConnection? {
        connections.withLock { $0[id] }
    }

    /// Forgets the connection `id`; returns whether it was there.
    @discardableResult
    func remove(_ id: String) -> Bool {
        connections.withLock { $0.removeValue(forKey: id) != nil }
    }

    /// How many are open.
    var count: Int {
        connections.withLock { $0.count }
    }
}
