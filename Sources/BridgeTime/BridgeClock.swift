/// The time the bridge's own timers run on: the stuck-client and orphaned-request sweeps, the shutdown grace period
/// and a client's write-stall measure. Production uses `ContinuousClock`; a test injects a clock it moves by hand
/// (through BridgeServer's `BridgeServerConfiguration.clock`), so a timer test neither sleeps nor depends on a machine's load.
///
/// Instants are `ContinuousClock` instants, so a test clock can start at `ContinuousClock.now` and move from there.
public protocol BridgeClock: Sendable {
    /// The current instant.
    var now: ContinuousClock.Instant { get }

    /// Suspends until `deadline` (at once if it has passed); throws `CancellationError` if the task is cancelled.
    func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration?) async throws
}

extension BridgeClock {
    /// Suspends for `duration` from ``now``; throws `CancellationError` if the task is cancelled.
    package func sleep(for duration: Duration) async throws {
        try await sleep(until: now + duration, tolerance: nil)
    }
}

extension ContinuousClock: BridgeClock {}
