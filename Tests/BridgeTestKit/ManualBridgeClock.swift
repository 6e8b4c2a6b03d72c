public import BridgeTime
public import Foundation
import Synchronization

/// A clock the test moves by hand: ``now`` stands still until ``advance(by:)``, and a task sleeping on it wakes only
/// when the clock is moved past its deadline (or the task is cancelled).
///
/// Starts at the real `ContinuousClock.now`.
///
/// Shared by the test targets that drive the bridge's timers (``BridgeServerConfiguration/clock``).
public final class ManualBridgeClock: BridgeClock {
    private struct Sleeper {
        let deadline: ContinuousClock.Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: ContinuousClock.Instant
        var sleepers: [UInt64: Sleeper] = [:]
        var nextID: UInt64 = 0
        /// Sleeps cancelled before they parked.
        var cancelled: Set<UInt64> = []
    }

    private let state: Mutex<State>
    /// Told whenever a task begins to sleep on the clock (what ``waitForSleepers(_:timeout:)`` waits for).
    private let changes = ChangeSignal()
    private let start: ContinuousClock.Instant
    private let wallStart: Date

    /// A clock standing at `start`, whose wall time stands at `wallStart` (the real time when it is made, unless
    /// given).
    public init(start: ContinuousClock.Instant = .now, wallStart: Date = Date()) {
        self.start = start
        self.wallStart = wallStart
        state = Mutex(State(now: start))
    }

    /// Where the clock stands.
    public var now: ContinuousClock.Instant { state.withLock { $0.now } }

    /// The wall time: `wallStart` moved by as much as the clock was.
    public var wallTime: Date { wallStart.addingTimeInterval(elapsed) }

    /// Seconds the clock was moved since it was made (for a wall clock that follows it).
    public var elapsed: Double {
        let moved = now - start
        return Double(moved.components.seconds) + Double(moved.components.attoseconds) / 1e18
    }

    /// How many tasks sleep on the clock right now.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// Suspends until a test moves the clock to `deadline` or past it (``advance(by:)``); throws `CancellationError`
    /// when the task is cancelled first.
    public func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration?) async throws {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> Result<Void, any Error>? in
                    if state.cancelled.remove(id) != nil { return .failure(CancellationError()) }
                    if deadline <= state.now { return .success(()) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) } else { changes.notify() }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                if let sleeper = state.sleepers.removeValue(forKey: id) { return sleeper }
                state.cancelled.insert(id)
                return nil
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves the clock on and wakes every task whose deadline is reached.
    public func advance(by duration: Duration) {
        let due = state.withLock { state -> [Sleeper] in
            state.now += duration
            let now = state.now
            let due = state.sleepers.filter { $0.value.deadline <= now }
            for id in due.keys { state.sleepers[id] = nil }
            return Array(due.values)
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Waits until at least `count` tasks sleep on the clock (their timers are armed: whatever they did since they
    /// last woke is done); false if that takes longer than `timeout` of real time.
    public func waitForSleepers(_ count: Int, timeout: Duration = TestBounds.notUnderTest) async -> Bool {
        await changes.wait(timeout: timeout) { sleeperCount >= count }
    }
}

/// The hand-moved clock as a standard `Clock` too (for code that takes one, such as `WorkspaceIO`).
extension ManualBridgeClock: Clock {
    /// Zero: the clock moves only when a test moves it, by any amount.
    public var minimumResolution: Duration { .zero }
}
