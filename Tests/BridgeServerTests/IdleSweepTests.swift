import BridgeTestKit
import Foundation
import Synchronization
import Testing
@testable import BridgeServer
@testable import BridgeTime

/// Issue 14 goal 5: an idle bridge uses no CPU.
///
/// Its sweeps (stuck clients, orphaned requests and retention) sleep until something can be due instead of ticking, and
/// still run when it is. All on the injected clock.
@Suite("Sweeps sleep while nothing is due", .timeLimit(.minutes(1)))
struct IdleSweepTests {
    /// A ``ManualClock`` that counts the sleeps begun on it: a timer that ticks begins one per tick.
    final class CountingClock: BridgeClock {
        let manual = ManualClock()
        private let begun = Mutex(0)

        var now: ContinuousClock.Instant { manual.now }
        var wallTime: Date { manual.wallTime }
        var sleepsBegun: Int { begun.withLock { $0 } }

        func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration?) async throws {
            begun.withLock { $0 += 1 }
            try await manual.sleep(until: deadline, tolerance: tolerance)
        }
    }

    @Test("an idle bridge: moving its clock a minute in half-second steps wakes none of its sweeps", .tags(.loopback))
    func idleBridgeSleeps() async throws {
        let clock = CountingClock()
        let logs = TestLog()
        try await TestBridge.with(logs: logs, configure: { $0.clock = clock }, { port, _ in
            // A client came and went: nothing of it is left to sweep.
            try await TestClient.with(port: port) { phone in try await phone.initialize(seed: false) }
            // The hub has handled the disconnect (whatever it did to the timers is done: a timer it moved has
            // left the clock), and both sweeps are armed again.
            try #require(await logs.waitFor("client disconnected"))
            try #require(await clock.manual.waitForSleepers(2))
            let begun = clock.sleepsBegun
            for _ in 0..<120 {
                clock.manual.advance(by: .milliseconds(500))
                // A ticking sweep has slept again by the time both are armed.
                try #require(await clock.manual.waitForSleepers(2))
            }
            #expect(clock.sleepsBegun == begun, "the sweeps slept \(clock.sleepsBegun - begun) more times in an idle minute")
        })
    }

    @Test("the timer sleeps until the instant its sweep returns, or its backstop when nothing can be due", .tags(.unit))
    func sleepsUntilDue() async throws {
        let clock = ManualClock()
        let timer = SweepTimer(clock: clock)
        let runs = Mutex(0)
        let due = Mutex<ContinuousClock.Instant?>(nil)
        let changes = ChangeSignal()
        let task = Task {
            await timer.run {
                runs.withLock { $0 += 1 }
                changes.notify()
                return due.withLock { $0 }
            }
        }
        defer { task.cancel() }
        try #require(await clock.waitForSleepers(1))
        #expect(runs.withLock { $0 } == 1)
        clock.advance(by: SweepTimer.horizon / 2)
        try #require(await clock.waitForSleepers(1))
        #expect(runs.withLock { $0 } == 1, "nothing due: it slept through")
        // Something becomes due in 10 s: the timer is told, wakes, and sleeps until then.
        due.withLock { $0 = clock.now + .seconds(10) }
        timer.schedule(at: clock.now + .seconds(10))
        try #require(await waitUntil(changes) { runs.withLock { $0 } == 2 })
        try #require(await clock.waitForSleepers(1))
        // A later instant does not wake it.
        timer.schedule(at: clock.now + .seconds(20))
        clock.advance(by: .seconds(9))
        try #require(await clock.waitForSleepers(1))
        #expect(runs.withLock { $0 } == 2)
        due.withLock { $0 = nil }
        clock.advance(by: .seconds(1))
        #expect(await waitUntil(changes) { runs.withLock { $0 } == 3 }, "the sweep runs when due")
        try #require(await clock.waitForSleepers(1))
        task.cancel()
        await task.value
        #expect(clock.sleeperCount == 0, "cancelling the run ends its sleep")
    }

    @Test("a client's queue tells the stuck-client timer when it can be stuck; the sweep then finds it stuck", .tags(.unit))
    func stuckClientWakesSweep() async throws {
        let clock = ManualClock()
        let timer = SweepTimer(clock: clock)
        let queue = OutboundQueue(capacity: 2, hardCapacity: 100, stallTimeout: .seconds(5), clock: clock, stuckTimer: timer)
        let writer = RecordingFrameWriter()
        queue.attach(writer)
        let runs = Mutex(0)
        let found = Mutex(false)
        let changes = ChangeSignal()
        let task = Task {
            await timer.run {
                runs.withLock { $0 += 1 }
                if queue.isStuck { found.withLock { $0 = true } }
                changes.notify()
                return queue.stuckDeadline
            }
        }
        defer { task.cancel() }
        try #require(await clock.waitForSleepers(1))
        // Behind, but nothing written yet (not stuck, and it cannot be yet): the sweep is not woken.
        for text in ["a", "b", "c"] { #expect(queue.yield(.text(text)) == .enqueued) }
        clock.advance(by: .seconds(60))
        try #require(await clock.waitForSleepers(1))
        #expect(runs.withLock { $0 } == 1)
        // Written, three behind: stuck in 5 s unless the peer takes them.
        writer.runJobs()
        #expect(queue.stuckDeadline == clock.now + .seconds(5))
        try #require(await waitUntil(changes) { runs.withLock { $0 } == 2 })
        try #require(await clock.waitForSleepers(1))
        #expect(!found.withLock { $0 })
        clock.advance(by: .seconds(5))
        #expect(await waitUntil(changes) { found.withLock { $0 } }, "the sweep ran when the client became stuck")
    }

    /// Waits (bounded) until `condition` holds, looking again each time the sweep ran.
    private func waitUntil(_ changes: ChangeSignal, _ condition: () -> Bool) async -> Bool {
        await changes.wait(timeout: .seconds(10), for: condition)
    }
}
