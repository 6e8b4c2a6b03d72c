import BridgePairing

/// The hub's connected clients: each connection's record under the id the hub gave it (counting from 1, never reused),
/// the paired device and token family it authenticated as (auth on), and the connections answering their own
/// `_oa/logout`.
///
/// Which connections a revocation closes, and which sessions a client is attached to on its side, are answered here.
///
/// A value with no side effects but one it is asked for (the records' queues and loggers are the hub's to use; the
/// streams of ``untilEmpty()`` end as the last connection is removed): `HubConnectionTableTests` tests it without a
/// bridge.
struct ConnectionTable {
    private var records: [ConnectionID: ClientRecord] = [:]
    private var nextID: ConnectionID = 1
    /// The paired device and token family each connection authenticated as (auth on), for `_oa/me`, `_oa/logout`, the
    /// token-expiry sweep and for closing it when its device or token family is revoked.
    private var credentials: [ConnectionID: AuthenticatedDevice] = [:]
    /// Connections answering their own `_oa/logout`: closed once the answer is queued, not before.
    private var loggingOut: Set<ConnectionID> = []
    /// The streams of ``untilEmpty()`` still open: each ends when the table empties.
    private var emptyWatchers: [AsyncStream<Void>.Continuation] = []

    /// How many clients are connected.
    var count: Int { records.count }

    /// Whether no client is connected.
    var isEmpty: Bool { records.isEmpty }

    /// The connected clients' ids, in no order.
    var ids: Dictionary<ConnectionID, ClientRecord>.Keys { records.keys }

    /// The connected clients' records, in no order.
    var clients: Dictionary<ConnectionID, ClientRecord>.Values { records.values }

    /// The record of connection `id`, changed in place (no copy of it is made).
    subscript(id: ConnectionID) -> ClientRecord? {
        get { records[id] }
        _modify { yield &records[id] }
    }

    /// Adds a connection (of `device`, when auth is on) under a new id; `record` makes its record for that id.
    mutating func add(device: AuthenticatedDevice?, record: (ConnectionID) -> ClientRecord) -> ConnectionID {
        let id = nextID
        nextID += 1
        if let device { credentials[id] = device }
        records[id] = record(id)
        return id
    }

    /// Forgets connection `id` and what it authenticated as; returns its record (`nil` if it was gone already).
    ///
    /// The last one out ends the streams of ``untilEmpty()``.
    mutating func remove(_ id: ConnectionID) -> ClientRecord? {
        guard let record = records.removeValue(forKey: id) else { return nil }
        credentials[id] = nil
        loggingOut.remove(id)
        if records.isEmpty {
            for watcher in emptyWatchers { watcher.finish() }
            emptyWatchers.removeAll()
        }
        return record
    }

    /// A stream that ends when no client is connected: at once if none is now, else as the last one is removed.
    ///
    /// It yields nothing; a waiter iterates it until it ends (or its task is cancelled), so shutdown waits for the
    /// event instead of looking again and again.
    mutating func untilEmpty() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream<Void>.makeStream()
        if records.isEmpty { continuation.finish() } else { emptyWatchers.append(continuation) }
        return stream
    }

    /// How many streams of ``untilEmpty()`` have not ended yet.
    var emptyWatcherCount: Int { emptyWatchers.count }

    /// The paired device connection `id` authenticated as (auth on).
    func device(of id: ConnectionID) -> AuthenticatedDevice? {
        credentials[id]
    }

    /// The connections of paired devices, with what they authenticated as, in id order.
    var authenticated: [(id: ConnectionID, device: AuthenticatedDevice)] {
        credentials.sorted { $0.key < $1.key }.map { (id: $0.key, device: $0.value) }
    }

    /// Connection `id` begins (`true`) or ends (`false`) answering its own `_oa/logout`: meanwhile a revocation does
    /// not close it (``closedBy(_:)``).
    mutating func setLoggingOut(_ id: ConnectionID, _ loggingOut: Bool) {
        if loggingOut { self.loggingOut.insert(id) } else { self.loggingOut.remove(id) }
    }

    /// The connections a revocation closes, in id order: those of the device, or opened with a token of the family,
    /// except one answering its own `_oa/logout` (it is closed once its answer is queued).
    func closedBy(_ revocation: TokenRevocation) -> [ConnectionID] {
        let affected: [ConnectionID] = switch revocation {
        case .device(let device): records.filter { $0.value.device == device }.map(\.key)
        case .family(let family): credentials.filter { $0.value.familyID == family }.map(\.key)
        }
        return affected.filter { !loggingOut.contains($0) }.sorted()
    }

    /// Notes on every client's side that it is attached to no session (the agent that had them is gone).
    mutating func detachAll() {
        for id in Array(records.keys) { records[id]?.sessions.removeAll() }
    }
}
