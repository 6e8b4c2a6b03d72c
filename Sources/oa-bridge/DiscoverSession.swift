import BridgeClient
import BridgeDiscovery
import UnixSignals

/// Consumes browse events for `discover`: prints them, probes, and decides when to stop.
struct DiscoverSession: Sendable {
    /// How a browse ended.
    enum Outcome: Sendable {
        /// The daemon could not be reached (one-shot only; `--watch` waits for it).
        case daemonUnavailable(reason: String)
        /// Browsing ended; these services were present at the end.
        case finished([Found])
    }

    /// A service as last seen, with its probe result.
    struct Found: Sendable {
        var service: ResolvedService
        var probe: HandshakeProbe.Result?
    }

    let events: AsyncStream<BrowseEvent>
    let output: DiscoverOutput
    let prober: HandshakeProbe?
    let watch: Bool
    let stopEarly: Bool

    /// Runs until the deadline, a signal, or (one-shot) the daemon has said everything.
    func run(deadline: Duration?) async -> Outcome {
        await withTaskGroup(of: Outcome?.self) { group in
            group.addTask { await consume() }
            if let deadline {
                group.addTask {
                    try? await Task.sleep(for: deadline)
                    return nil
                }
            }
            if !watch && stopEarly {
                group.addTask { await waitUntilSettled() }
            }
            group.addTask {
                for await _ in await UnixSignalsSequence(trapping: .sigint, .sigterm) { break }
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            if let first { return first }
            return .finished(await output.snapshot())
        }
    }

    /// One-shot: ends once the daemon reported everything and nothing new came for a moment,
    /// so resolutions still in flight after ALL_FOR_NOW get their chance.
    private func waitUntilSettled() async -> Outcome? {
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(100))
            if await output.isSettled(quietFor: .milliseconds(400)) {
                return .finished(await output.snapshot())
            }
        }
        return nil
    }

    private func consume() async -> Outcome? {
        for await event in events {
            switch event {
            case .added(let service), .updated(let service):
                let isNew: Bool
                if case .added = event { isNew = true } else { isNew = false }
                let probe = await prober?.probe(service)
                await output.show(service, probe: probe, isNew: isNew)
            case .removed(let instance):
                await output.removed(instance)
            case .allForNow:
                await output.allForNow()
            case .daemonUnavailable(let reason):
                if !watch { return .daemonUnavailable(reason: reason) }
                await output.daemonUnavailable(reason: reason, backend: nil)
            case .daemonAvailable:
                await output.daemonAvailable()
            case .failure(let error):
                await output.failure(error)
            }
        }
        return .finished(await output.snapshot())
    }
}
