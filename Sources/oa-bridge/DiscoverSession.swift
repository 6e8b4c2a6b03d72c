import BridgeClient
import BridgeDiagnostics
import BridgeDiscovery
import UnixSignals

/// Runs a browse for `discover`: feeds events (probed when asked) to the output, and decides when to stop.
///
/// The state (services, diffs, conflicts, settling) is the library's ``DiscoveryWatcher``, kept by the output.
struct DiscoverSession: Sendable {
    /// How a browse ended.
    enum Outcome: Sendable {
        /// The daemon could not be reached (one-shot only; `--watch` waits for it).
        case daemonUnavailable(reason: String)
        /// Browsing ended; these services were present at the end.
        case finished([Found])
    }

    /// A service found, with its probe result.
    typealias Found = ProbedService

    let events: AsyncStream<BrowseEvent>
    let output: DiscoverOutput
    let prober: HandshakeProbe?
    let watch: Bool
    let stopEarly: Bool

    /// Runs until the deadline, a signal, or (one-shot) the daemon has said everything.
    func run(deadline: Duration?) async -> Outcome {
        let output = self.output
        var settle: (@Sendable () async -> Bool)?
        if !watch && stopEarly { settle = { @Sendable in await output.isSettled() } }
        let body: @Sendable () async -> Outcome? = { await self.consume() }
        let fallback: @Sendable () async -> Outcome = { Outcome.finished(await output.snapshot()) }
        return await DiscoverSession.race(deadline: deadline, settle: settle, body: body, fallback: fallback)
    }

    /// Runs `body` against the deadline, SIGINT/SIGTERM and (when given) `settle` polled every 100 ms; the first to
    /// end wins, and `fallback` gives the result when it was not `body`.
    static func race<T: Sendable>(deadline: Duration?, settle: (@Sendable () async -> Bool)?,
                                  body: @escaping @Sendable () async -> T?, fallback: @escaping @Sendable () async -> T) async -> T {
        await withTaskGroup(of: T?.self) { group in
            group.addTask { await body() }
            if let deadline {
                group.addTask {
                    try? await Task.sleep(for: deadline)
                    return nil
                }
            }
            if let settle {
                group.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .milliseconds(100))
                        if await settle() { return nil }
                    }
                    return nil
                }
            }
            group.addTask {
                for await _ in await UnixSignalsSequence(trapping: .sigint, .sigterm) { break }
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            if let first { return first }
            return await fallback()
        }
    }

    private func consume() async -> Outcome? {
        for await event in events {
            if case .daemonUnavailable(let reason) = event, !watch { return .daemonUnavailable(reason: reason) }
            var probe: HandshakeProbe.Result?
            if let prober {
                switch event {
                case .added(let service), .updated(let service):
                    await output.probeStarted()
                    probe = await prober.probe(service)
                    await output.probeEnded()
                default: break
                }
            }
            await output.handle(event, probe: probe)
        }
        return .finished(await output.snapshot())
    }
}
