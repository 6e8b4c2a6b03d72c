import BridgeTime

/// The bridge's ``BridgeClock`` as a standard `Clock`, for code that takes one (BridgeWorkspace's `WorkspaceIO`, whose
/// time limit on a file call then runs on the clock the hub's other timers run on, and a test moves by hand).
struct BridgeClockAsClock: Clock {
    /// The clock read and slept on.
    let base: any BridgeClock

    /// `base` as a `Clock`.
    init(_ base: any BridgeClock) {
        self.base = base
    }

    /// The base clock's instant.
    var now: ContinuousClock.Instant { base.now }

    /// Any amount: a clock moved by hand moves by as little as it is told.
    var minimumResolution: Duration { .zero }

    /// Sleeps on the base clock until `deadline`; throws `CancellationError` when the task is cancelled first.
    func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration?) async throws {
        try await base.sleep(until: deadline, tolerance: tolerance)
    }
}
