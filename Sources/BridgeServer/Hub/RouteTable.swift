import BridgeACP
import BridgeRPC

/// The requests sent to the agent that wait for its answer, under the ids the agent sees (counting from 1, never
/// given twice), and where each answer goes (``Route``): back to a client, to the bridge itself, or only to the log.
///
/// What the hub asks of them (is a session being created, is a prompt running, which request of a client is this) is
/// answered here.
///
/// A value (a bridge route holds the continuation its caller waits on, resumed by the hub): `HubRouteTableTests` tests
/// it without a bridge.
struct RouteTable {
    /// A request and the id the agent knows it by.
    typealias Entry = (id: Int64, route: Route)

    private var routes: [Int64: Route] = [:]
    private var nextID: Int64 = 1

    /// How many requests wait for the agent's answer.
    var count: Int { routes.count }

    /// Where the answer to request `id` goes.
    subscript(id: Int64) -> Route? { routes[id] }

    /// A new id for a request to the agent, for a route ``put(_:at:)`` later.
    mutating func reserveID() -> Int64 {
        defer { nextID += 1 }
        return nextID
    }

    /// Keeps `route` under a new id and returns the id.
    mutating func add(_ route: Route) -> Int64 {
        let id = reserveID()
        routes[id] = route
        return id
    }

    /// Keeps `route` under `id` (reserved, or the id of a request moved to the next agent).
    mutating func put(_ route: Route, at id: Int64) {
        routes[id] = route
    }

    /// Forgets request `id` and returns where its answer was to go.
    mutating func remove(_ id: Int64) -> Route? {
        routes.removeValue(forKey: id)
    }

    /// Removes the requests for which `matching` holds and returns them, oldest first.
    mutating func removeAll(where matching: (Route) -> Bool) -> [Entry] {
        let removed = ids(where: matching)
        return removed.compactMap { id in routes.removeValue(forKey: id).map { (id: id, route: $0) } }
    }

    /// The ids of the requests for which `matching` holds, oldest first.
    func ids(where matching: (Route) -> Bool) -> [Int64] {
        routes.filter { matching($0.value) }.keys.sorted()
    }

    /// The request of `connection` that the client sent with id `clientID`, if it waits for the agent.
    func clientRequest(of connection: ConnectionID, id clientID: JSONRPCID) -> (id: Int64, route: ClientRoute)? {
        for (id, route) in routes {
            if case .client(let client) = route, client.connection == connection, client.clientID == clientID { return (id, client) }
        }
        return nil
    }

    /// Whether a `session/new` or `session/fork` waits for the agent's answer.
    var sessionBeingCreated: Bool {
        routes.values.contains { route in
            guard case .client(let client) = route else { return false }
            return client.method == ACPMethod.sessionNew || client.method == ACPMethod.sessionFork
        }
    }

    /// The sessions with a `session/prompt` waiting for the agent's answer.
    var promptSessions: Set<String> {
        var result = Set<String>()
        for case .client(let route) in routes.values where route.method == ACPMethod.sessionPrompt {
            if let session = route.sessionID { result.insert(session) }
        }
        return result
    }

    /// Whether a `session/prompt` of `session` waits for the agent's answer.
    func promptRunning(_ session: String) -> Bool {
        routes.values.contains { route in
            if case .client(let client) = route { return client.method == ACPMethod.sessionPrompt && client.sessionID == session }
            return false
        }
    }

    /// How many sessions `connection` is about to join: its `session/new`, `fork`, `load` and `resume` waiting for the
    /// agent, except a load or resume of a session in `attached` (counted there already).
    func joining(_ connection: ConnectionID, attached: Set<String>) -> Int {
        routes.values.reduce(into: 0) { count, route in
            guard case .client(let pending) = route, pending.connection == connection,
                  [ACPMethod.sessionNew, ACPMethod.sessionLoad, ACPMethod.sessionResume, ACPMethod.sessionFork].contains(pending.method)
            else { return }
            if let loading = pending.sessionID, attached.contains(loading) { return }
            count += 1
        }
    }
}
