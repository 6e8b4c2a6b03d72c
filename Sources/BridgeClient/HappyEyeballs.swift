import BridgeDiscovery
public import BridgeTime

/// Races connection attempts in the spirit of RFC 8305: start the best candidate, start the next
/// one after `attemptDelay` (or at once when an attempt fails), take the first to succeed, cancel
/// the rest.
public struct HappyEyeballs: Sendable {
    /// How one attempt went.
    public struct Attempt: Sendable, Hashable {
        /// The candidate tried.
        public var endpoint: BridgeEndpoint
        /// Seconds from the race's start to this attempt's start.
        public var startedAt: Double
        /// Seconds the attempt took until it succeeded, failed, or was cancelled.
        public var duration: Double?
        /// `won`, `failed: …`, or `cancelled`.
        public var outcome: String
    }

    /// The pause before starting the next candidate while earlier ones are still trying.
    public var attemptDelay: Duration
    /// The clock the delay and the attempts' times are measured on (a test moves one by hand).
    public var clock: any BridgeClock

    /// Creates a racer.
    public init(attemptDelay: Duration = .milliseconds(250), clock: any BridgeClock = ContinuousClock()) {
        self.attemptDelay = attemptDelay
        self.clock = clock
    }

    /// Runs the race.
    ///
    /// `attempt` must honour cancellation. Returns the winner with its value and every
    /// attempt's report; throws `noEndpointReachable` when all fail.
    ///
    /// Attempts that succeed after the winner (two can finish at once) are handed to `closeLoser` before the race
    /// returns, so that a losing connection is never left open: pass `{ $0.close() }` for connections.
    public func race<Value: Sendable>(
        _ candidates: [BridgeEndpoint],
        attempt: @escaping @Sendable (BridgeEndpoint) async throws -> Value,
        closeLoser: @escaping @Sendable (Value) async -> Void = { _ in }
    ) async throws(BridgeClientError) -> (endpoint: BridgeEndpoint, value: Value, attempts: [Attempt]) {
        guard !candidates.isEmpty else { throw .noCandidates("no address to try") }
        let clock = self.clock
        let start = clock.now
        let seconds: @Sendable () -> Double = {
            (clock.now - start).inSeconds
        }
        var attempts: [Attempt] = []
        let outcome: (Int, Value)? = await withTaskGroup(of: RaceEvent<Value>.self) { group in
            var next = 0
            var running = 0
            func launch() {
                let index = next
                let endpoint = candidates[index]
                next += 1
                running += 1
                attempts.append(Attempt(endpoint: endpoint, startedAt: seconds(), duration: nil, outcome: "cancelled"))
                group.addTask {
                    do {
                        let value = try await attempt(endpoint)
                        return .finished(index: index, result: .success(value), at: seconds())
                    } catch {
                        return .finished(index: index, result: .failure(error), at: seconds())
                    }
                }
                if next < candidates.count {
                    let delay = attemptDelay
                    group.addTask {
                        try? await clock.sleep(for: delay)
                        return .delayElapsed
                    }
                }
            }
            launch()
            while let event = await group.next() {
                switch event {
                case .delayElapsed:
                    if next < candidates.count { launch() }
                case .finished(let index, let result, let at):
                    running -= 1
                    attempts[index].duration = at - attempts[index].startedAt
                    switch result {
                    case .success(let value):
                        attempts[index].outcome = "won"
                        group.cancelAll()
                        // The others end now (cancelled); any that had already succeeded lost: close it.
                        while let late = await group.next() {
                            guard case .finished(let lateIndex, .success(let loser), let lateAt) = late else { continue }
                            attempts[lateIndex].duration = lateAt - attempts[lateIndex].startedAt
                            attempts[lateIndex].outcome = "succeeded after the winner; closed"
                            await closeLoser(loser)
                        }
                        return (index, value)
                    case .failure(let error):
                        attempts[index].outcome = "failed: \(error)"
                        if next < candidates.count {
                            launch()
                        } else if running == 0 {
                            group.cancelAll()
                            return nil
                        }
                    }
                }
            }
            return nil
        }
        guard let (index, value) = outcome else {
            throw .noEndpointReachable(attempts.map { "\($0.endpoint.url) [\($0.endpoint.source.rawValue)]: \($0.outcome)" })
        }
        return (candidates[index], value, attempts)
    }
}

/// What a racing child task reports.
private enum RaceEvent<Value: Sendable>: Sendable {
    case finished(index: Int, result: Result<Value, any Error>, at: Double)
    case delayElapsed
}
