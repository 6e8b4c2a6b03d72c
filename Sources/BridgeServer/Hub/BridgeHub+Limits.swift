import BridgeACP
import BridgeRPC
import Logging

/// The per-connection caps: sessions per connection, and how batches share the hub.
extension BridgeHub {
    /// A batch's entries are handled this many at a time; the hub serves other connections in between.
    static let batchSlice = 32

    /// The error to answer when connection `id` may not have one more session, else `nil`.
    ///
    /// A session it is already attached to (`joining`) costs nothing; sessions being created or loaded for it
    /// count as attached.
    func sessionLimitError(_ id: ConnectionID, joining session: String? = nil) -> JSONRPCError? {
        guard let client = connections[id] else { return nil }
        if let session, client.sessions.contains(session) { return nil }
        let limit = configuration.maxSessionsPerConnection
        // Even if every request it has waiting became a session, it stays under the limit: nothing to count.
        guard client.sessions.count + client.pending >= limit else { return nil }
        // session/load attaches before it is forwarded: already counted in `sessions`.
        let joining = routes.joining(id, attached: client.sessions)
        guard client.sessions.count + joining >= limit else { return nil }
        client.logger.warning("too many sessions on one connection", metadata: ["limit": "\(limit)"])
        return BridgeErrors.tooManySessions(limit)
    }
}
