import BridgeTime
import Synchronization

/// Runs one of the hub's sweeps when something can be due, not on a tick, so an idle bridge uses no CPU.
///
/// ``run(_:)`` calls the sweep, which does what is due and returns the next instant anything it watches can become
/// due (`nil`: nothing can); the timer then sleeps on the bridge's clock until then, or for ``horizon`` at most (a
/// backstop, so a deadline nobody announced is late by that much at worst, never lost). Whoever creates something
/// that can become due earlier than the armed sleep (a client falling behind, a request orphaned, a session going
/// idle) calls ``schedule(at:)``, which wakes the timer early; a later instant changes nothing. Between sweeps exactly
/// one sleep is armed on the clock.
final class SweepTimer: Sendable {
    /// The longest sleep with nothing due.
    static let horizon: Duration = .seconds(3600)

    private struct State {
        /// The deadline of the sleep armed now; `nil` while the sweep runs.
        var armed: ContinuousClock.Instant?
        /// An earlier deadline asked for since the sleep was armed (or while the sweep ran).
        var requested: ContinuousClock.Instant?
        /// The sleep armed now, to cancel when an earlier deadline is asked for.
        var sleep: Task<Void, Never>?
    }

    private let clock: any BridgeClock
    private let state = Mutex(State())

    /// A timer sleeping on `clock`.
    init(clock: any BridgeClock) {
        self.clock = clock
    }

    /// Until cancelled: runs `sweep` at once, then each time the instant it returned (or one asked for with
    /// ``schedule(at:)``) is reached.
    func run(_ sweep: @Sendable () async -> ContinuousClock.Instant?) async {
        while !Task.isCancelled {
            let next = await sweep()
            let backstop = clock.now + SweepTimer.horizon
            let deadline = state.withLock { state in
                defer { state.requested = nil }
                let deadline = min(next ?? backstop, state.requested ?? backstop, backstop)
                state.armed = deadline
                return deadline
            }
            await sleep(until: deadline)
        }
    }

    /// Makes the sweep run no later than `deadline` (at once if it has passed).
    func schedule(at deadline: ContinuousClock.Instant) {
        let sleep = state.withLock { state -> Task<Void, Never>? in
            if let armed = state.armed, deadline >= armed { return nil }
            if let requested = state.requested, requested <= deadline { return nil }
            state.requested = deadline
            // `nil` while the sweep runs: it arms with `requested` when done.
            return state.sleep
        }
        sleep?.cancel()
    }

    private func sleep(until deadline: ContinuousClock.Instant) async {
        let clock = self.clock
        // A task of its own, so that ``schedule(at:)`` can end this sleep without cancelling the sweep's task.
        let sleep = Task<Void, Never> { _ = try? await clock.sleep(until: deadline, tolerance: nil) }
        let earlier = state.withLock { state in
            state.sleep = sleep
            return state.requested.map { $0 < deadline } ?? false
        }
        if earlier { sleep.cancel() }
        await withTaskCancellationHandler {
            await sleep.value
        } onCancel: {
            sleep.cancel()
        }
        state.withLock { state in
            state.sleep = nil
            state.armed = nil
        }
    }
}
