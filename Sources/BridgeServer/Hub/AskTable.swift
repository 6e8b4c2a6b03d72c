import BridgeACP
import BridgeRPC

/// The agent's requests to clients (`session/request_permission`, `elicitation/create`, an extension's request) that
/// wait for an answer, under the ids the bridge gave them (the ids the clients see), and the rules they follow: the
/// first success wins; an error waits while another client asked may still answer; a request nobody can answer any
/// more, or nobody answered in time, is settled.
///
/// A value with no side effects: each change returns what the hub then has to do (tell the other clients, answer the
/// agent), so every rule is tested without a bridge (`HubAskTableTests`).
struct AskTable {
    /// How long an agent's request may wait (``BridgeServerConfiguration``'s timeouts).
    struct Deadlines: Sendable, Equatable {
        /// For `session/request_permission` (a person decides).
        var permission: Duration
        /// For any other request.
        var other: Duration
        /// For a request nobody who could answer it is connected for.
        var orphaned: Duration

        /// How long a request of `method` may wait for an answer.
        func answerTimeout(_ method: String) -> Duration {
            method == ACPMethod.requestPermission ? permission : other
        }
    }

    /// A request and the id the clients know it by.
    typealias Entry = (id: Int64, ask: PendingAsk)

    /// What follows from a client's answer (``answer(_:from:outcome:)``).
    enum Answer {
        /// Nothing pending under that id for that client (answered already, timed out, or never asked of it).
        case unknown
        /// The client's error is kept; others asked may still answer.
        case waiting(PendingAsk)
        /// The request is settled with `outcome` (the agent gets it); `others` were asked too and are told.
        case settled(PendingAsk, others: [ConnectionID])
    }

    /// What a client's departure settles (``clientLeft(_:at:sessionExists:)``).
    enum Departure {
        /// Every other client asked had failed: the agent gets the last error.
        case failed(Entry, JSONRPCError)
        /// Nobody is left to ask and the session is gone: nobody can answer.
        case unaskable(Entry)
    }

    /// Why a request is settled by the sweep (``expire(at:)``).
    enum Expiry {
        /// Nobody answered within ``Deadlines/answerTimeout(_:)``.
        case unanswered(Entry, after: Duration)
        /// Nobody who could answer was connected for ``Deadlines/orphaned``.
        case orphaned(Entry, after: Duration)
    }

    /// The timeouts the requests run on.
    let deadlines: Deadlines
    private var pending: [Int64: PendingAsk] = [:]
    private var nextID: Int64 = 1

    /// An empty table whose requests wait at most as long as `deadlines` say.
    init(deadlines: Deadlines) {
        self.deadlines = deadlines
    }

    /// How many requests wait.
    var count: Int { pending.count }

    /// The request the clients know as `id`.
    subscript(id: Int64) -> PendingAsk? { pending[id] }

    /// Keeps a request of the agent asked of `targets` at `now`, and returns the id the clients know it by (counting
    /// from 1).
    ///
    /// With no target (nobody attached: a phone reconnecting) it is orphaned from `now` on, and waits for a client
    /// to resume the session (``askAgain(session:client:canAnswer:)``).
    mutating func add(
        agentRequestID: JSONRPCID, method: String, sessionID: String, params: JSONValue?, targets: Set<ConnectionID>,
        generation: Int, at now: ContinuousClock.Instant
    ) -> Int64 {
        let id = nextID
        nextID += 1
        pending[id] = PendingAsk(
            agentRequestID: agentRequestID, method: method, sessionID: sessionID, params: params, targets: targets,
            generation: generation, orphanedSince: targets.isEmpty ? now : nil, askedAt: now)
        return id
    }

    /// Removes the requests for which `matching` holds and returns them, oldest first.
    @discardableResult
    mutating func removeAll(where matching: (PendingAsk) -> Bool) -> [Entry] {
        let removed = pending.filter { matching($0.value) }.sorted { $0.key < $1.key }
        for (id, _) in removed { pending[id] = nil }
        return removed.map { (id: $0.key, ask: $0.value) }
    }

    /// The request `id` if `client` was asked it and has not answered: the hub converts the answer with it.
    func asked(_ id: Int64, of client: ConnectionID) -> PendingAsk? {
        guard let ask = pending[id], ask.targets.contains(client) else { return nil }
        return ask
    }

    /// A client's answer (official spelling): a success settles the request, the other clients asked are told; an
    /// error settles it only once every client asked has failed (the agent then gets the last error).
    mutating func answer(_ id: Int64, from client: ConnectionID, outcome: Result<JSONValue, JSONRPCError>) -> Answer {
        guard var ask = asked(id, of: client) else { return .unknown }
        if case .failure(let error) = outcome {
            ask.targets.remove(client)
            ask.failed.insert(client)
            ask.lastError = error
            if !ask.targets.isEmpty {
                pending[id] = ask
                return .waiting(ask)
            }
        }
        pending[id] = nil
        return .settled(ask, others: ask.targets.filter { $0 != client }.sorted())
    }

    /// A client went away at `now`: it is no longer asked.
    ///
    /// A request with nobody left to ask waits, orphaned, for a client that resumes its session, unless every
    /// client asked failed (the agent gets the last error) or its session is gone (`sessionExists` says no: nobody
    /// can answer). Returns what is settled, oldest first.
    mutating func clientLeft(
        _ client: ConnectionID, at now: ContinuousClock.Instant, sessionExists: (String) -> Bool
    ) -> [Departure] {
        var settled: [Departure] = []
        for id in pending.keys.sorted() {
            guard var ask = pending[id], ask.targets.contains(client) else { continue }
            ask.targets.remove(client)
            guard ask.targets.isEmpty else {
                pending[id] = ask
                continue
            }
            ask.orphanedSince = now
            if let error = ask.lastError {
                pending[id] = nil
                settled.append(.failed((id, ask), error))
            } else if !sessionExists(ask.sessionID) {
                pending[id] = nil
                settled.append(.unaskable((id, ask)))
            } else {
                pending[id] = ask
            }
        }
        return settled
    }

    /// A client attached to `session`: it is asked the session's waiting requests it was not asked yet, did not fail,
    /// and can answer (`canAnswer` of the method), which are no longer orphaned.
    ///
    /// Returns them, oldest first.
    mutating func askAgain(session: String, client: ConnectionID, canAnswer: (String) -> Bool) -> [Entry] {
        var asked: [Entry] = []
        for id in pending.keys.sorted() {
            guard var ask = pending[id], ask.sessionID == session, !ask.targets.contains(client), !ask.failed.contains(client),
                  canAnswer(ask.method) else { continue }
            ask.targets.insert(client)
            ask.orphanedSince = nil
            pending[id] = ask
            asked.append((id, ask))
        }
        return asked
    }

    /// The earliest instant a request times out, or has been orphaned long enough to be settled; `nil` when none waits.
    var nextDeadline: ContinuousClock.Instant? {
        var next: ContinuousClock.Instant?
        for ask in pending.values {
            var due = ask.askedAt + deadlines.answerTimeout(ask.method)
            if ask.targets.isEmpty, let since = ask.orphanedSince { due = min(due, since + deadlines.orphaned) }
            next = min(next ?? due, due)
        }
        return next
    }

    /// Removes and returns, oldest first, the requests due at `now`: unanswered past their timeout, or orphaned
    /// (nobody left to ask) for ``Deadlines/orphaned``.
    mutating func expire(at now: ContinuousClock.Instant) -> [Expiry] {
        var expired: [Expiry] = []
        for id in pending.keys.sorted() {
            guard let ask = pending[id] else { continue }
            let limit = deadlines.answerTimeout(ask.method)
            if now - ask.askedAt >= limit {
                pending[id] = nil
                expired.append(.unanswered((id, ask), after: limit))
            } else if ask.targets.isEmpty, let since = ask.orphanedSince, now - since >= deadlines.orphaned {
                pending[id] = nil
                expired.append(.orphaned((id, ask), after: deadlines.orphaned))
            }
        }
        return expired
    }
}
