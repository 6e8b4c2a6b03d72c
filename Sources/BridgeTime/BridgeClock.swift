public import Foundation

/// The package's one clock: the time the bridge's timers run on (the stuck-client and orphaned-request sweeps, the
/// shutdown grace period, a client's write-stall measure) and the wall time it compares with what it keeps (token
/// expiry, session timestamps).
///
/// Production uses `ContinuousClock`; a test injects a clock it moves by hand (through BridgeServer's
/// `BridgeServerConfiguration.clock`, and BridgePairing's `TokenClock(_:)` for the token store), so a timer test
/// neither sleeps nor depends on a machine's load.
///
/// Instants are `ContinuousClock` instants, so a test clock can start at `ContinuousClock.now` and move from there;
/// its ``wallTime`` moves with it.
public protocol BridgeClock: Sendable {
    /// The current instant.
    var now: ContinuousClock.Instant { get }

    /// The current wall-clock time: what expiry dates and timestamps are compared with. A clock moved by hand moves
    /// it by as much as ``now``.
    var wallTime: Date { get }

    /// Suspends until `deadline` (at once if it has passed); throws `CancellationError` if the task is cancelled.
    func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration?) async throws
}

extension BridgeClock {
    /// Suspends for `duration` from ``now``; throws `CancellationError` if the task is cancelled.
    package func sleep(for duration: Duration) async throws {
        try await sleep(until: now + duration, tolerance: nil)
    }
}

extension ContinuousClock: BridgeClock {
    /// The system's wall clock (`Date()`).
    public var wallTime: Date { Date() }
}
