import BridgeRPC

/// One session's prompts by the idempotency key their client sent (`_meta.oa.idempotencyKey`): the last
/// ``capacity`` keys with their outcome, so that a retry is never sent to the agent again.
///
/// A retry while the first runs waits for its outcome; a retry after it ended gets the stored outcome at once.
struct IdempotencyLedger {
    /// The most keys kept per session; the oldest finished ones are forgotten first.
    static let capacity = 256
    /// The longest key accepted, in characters.
    static let maxKeyLength = 128

    /// A client waiting for a prompt's outcome.
    struct Waiter: Equatable {
        let connection: ConnectionID
        let requestID: JSONRPCID
        let batch: UInt64?
    }

    /// What a prompt with a key does.
    enum Decision: Equatable {
        /// A key not seen: the prompt goes to the agent; `position` orders the key among the session's.
        case send(position: Int64)
        /// The prompt with this key runs: the retry waits for its outcome.
        case wait
        /// The prompt with this key ended: the retry gets this outcome.
        case answer(Result<JSONValue, JSONRPCError>)
    }

    private enum Entry {
        case running(waiters: [Waiter])
        case finished(Result<JSONValue, JSONRPCError>)
    }

    private var entries: [String: (position: Int64, entry: Entry)] = [:]
    private(set) var nextPosition: Int64 = 1

    /// How many keys are kept.
    var count: Int { entries.count }

    /// The oldest position kept (keys before it were forgotten).
    var oldestPosition: Int64 { entries.values.map(\.position).min() ?? nextPosition }

    /// Decides what a prompt with `key` does; a retry that must wait is added as `waiter`.
    mutating func begin(_ key: String, waiter: Waiter) -> Decision {
        if let (position, entry) = entries[key] {
            switch entry {
            case .running(let waiters):
                entries[key] = (position, .running(waiters: waiters + [waiter]))
                return .wait
            case .finished(let outcome):
                return .answer(outcome)
            }
        }
        let position = nextPosition
        nextPosition += 1
        entries[key] = (position, .running(waiters: []))
        evictBeyondCapacity()
        return .send(position: position)
    }

    /// The prompt with `key` ended: its outcome is kept; returns the position and the retries waiting for it.
    @discardableResult
    mutating func finish(_ key: String, outcome: Result<JSONValue, JSONRPCError>) -> (position: Int64, waiters: [Waiter])? {
        guard let (position, entry) = entries[key] else { return nil }
        entries[key] = (position, .finished(outcome))
        if case .running(let waiters) = entry { return (position, waiters) }
        return (position, [])
    }

    /// Keeps a key read back from the store with its outcome (restored keys are all finished).
    mutating func restore(_ key: String, position: Int64, outcome: Result<JSONValue, JSONRPCError>) {
        entries[key] = (position, .finished(outcome))
        nextPosition = max(nextPosition, position + 1)
        evictBeyondCapacity()
    }

    /// Forgets the waiters of a connection that went away.
    mutating func forget(_ connection: ConnectionID) {
        for (key, value) in entries {
            guard case .running(let waiters) = value.entry, waiters.contains(where: { $0.connection == connection }) else { continue }
            entries[key] = (value.position, .running(waiters: waiters.filter { $0.connection != connection }))
        }
    }

    private mutating func evictBeyondCapacity() {
        while entries.count > Self.capacity {
            // The oldest finished key goes; a running one is kept (its retries still wait).
            let finished = entries.filter { if case .finished = $0.value.entry { true } else { false } }
            guard let oldest = finished.min(by: { $0.value.position < $1.value.position }) else { return }
            entries[oldest.key] = nil
        }
    }

    /// The key a `session/prompt`'s params carry in `_meta.oa.idempotencyKey`, and the params without `_meta.oa`
    /// (the agent never sees it; `_meta` itself goes when nothing else is in it).
    ///
    /// A key that is not a string of 1 to ``maxKeyLength`` characters is an error.
    static func takeKey(from params: JSONValue?) throws(JSONRPCError) -> (key: String?, params: JSONValue?) {
        guard var members = params?.objectValue, var meta = members["_meta"]?.objectValue, let oa = meta["oa"] else { return (nil, params) }
        meta["oa"] = nil
        members["_meta"] = meta.isEmpty ? nil : .object(meta)
        guard let raw = oa["idempotencyKey"], raw != .null else { return (nil, .object(members)) }
        guard case .string(let key) = raw, (1...maxKeyLength).contains(key.count) else {
            throw JSONRPCError.invalidParams(
                "_meta.oa.idempotencyKey must be a string of 1 to \(maxKeyLength) characters",
                data: ["field": "_meta.oa.idempotencyKey"])
        }
        return (key, .object(members))
    }
}
