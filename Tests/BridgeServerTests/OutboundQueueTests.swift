@testable import BridgeServer
import NIOCore
import Synchronization
import Testing

@Suite("A client's outbound queue")
struct OutboundQueueTests {
    private func texts(_ frames: [OutboundFrame]?) -> [String]? {
        frames?.map { frame in
            switch frame {
            case .textBytes(let bytes): String(buffer: bytes)
            case .close(_, let reason): "close: \(reason)"
            }
        }
    }

    @Test("frames come out in order, all that is queued at once; the writer waits for the next")
    func order() async {
        let queue = OutboundQueue(capacity: 10)
        #expect(queue.yield(.text("a")) == .enqueued)
        #expect(queue.yield(.text("b")) == .enqueued)
        #expect(texts(await queue.next()) == ["a", "b"])
        async let later = queue.next()
        try? await Task.sleep(for: .milliseconds(20))
        #expect(queue.yield(.text("c")) == .enqueued)
        #expect(texts(await later) == ["c"])
    }

    @Test("past capacity a stalled writer's frames are dropped; taken frames no longer count and are progress")
    func capacity() async {
        let clock = ManualClock()
        let queue = OutboundQueue(capacity: 2, hardCapacity: 4, stallTimeout: .seconds(2), now: clock.read)
        #expect(queue.yield(.text("a")) == .enqueued)
        #expect(queue.yield(.text("b")) == .enqueued)
        clock.advance(by: .seconds(3))  // nothing taken for 3 s with frames waiting: stuck
        #expect(queue.yield(.text("c")) == .dropped)
        let batch = await queue.next()
        #expect(texts(batch) == ["a", "b"])
        // Taken in one go, but not started: they still count, and are no progress yet.
        #expect(queue.yield(.text("c")) == .dropped)
        queue.taken()
        #expect(queue.yield(.text("c")) == .enqueued)
        clock.advance(by: .seconds(3))
        #expect(queue.yield(.text("d")) == .dropped)
    }

    @Test("a client that keeps taking may fall behind up to the hard capacity, not further")
    func slowReader() async {
        let clock = ManualClock()
        let queue = OutboundQueue(capacity: 2, hardCapacity: 4, stallTimeout: .seconds(2), now: clock.read)
        for text in ["a", "b", "c", "d"] { #expect(queue.yield(.text(text)) == .enqueued) }
        #expect(queue.yield(.text("e")) == .dropped)  // the hard limit, however recent the progress
        _ = await queue.next()
        clock.advance(by: .seconds(5))
        queue.taken()  // progress just now: behind, but reading
        #expect(queue.yield(.text("e")) == .enqueued)
        #expect(queue.yield(.text("f")) == .dropped)
    }

    @Test("a queue that ran dry is not stalled: a burst long after the last frame is taken in")
    func burstAfterIdle() async {
        let clock = ManualClock()
        let queue = OutboundQueue(capacity: 2, hardCapacity: 4, stallTimeout: .seconds(2), now: clock.read)
        #expect(queue.yield(.text("a")) == .enqueued)
        _ = await queue.next()
        queue.taken()
        clock.advance(by: .seconds(60))
        for text in ["b", "c", "d", "e"] { #expect(queue.yield(.text(text)) == .enqueued) }
        clock.advance(by: .seconds(2))
        #expect(queue.yield(.text("f")) == .dropped)
    }

    @Test("after finish the writer gets what is queued, then nil; new frames are refused")
    func finish() async {
        let queue = OutboundQueue(capacity: 5)
        queue.yield(.text("a"))
        queue.yield(.close(.goingAway, "bye"))
        queue.finish()
        #expect(queue.yield(.text("late")) == .terminated)
        #expect(texts(await queue.next()) == ["a", "close: bye"])
        #expect(await queue.next() == nil)
    }

    @Test("a waiting writer is woken by finish, and by cancellation")
    func wakeUps() async {
        let finished = OutboundQueue(capacity: 5)
        async let ended = finished.next()
        try? await Task.sleep(for: .milliseconds(20))
        finished.finish()
        #expect(await ended == nil)

        let cancelled = OutboundQueue(capacity: 5)
        let writer = Task { await cancelled.next() }
        try? await Task.sleep(for: .milliseconds(20))
        writer.cancel()
        #expect(await writer.value == nil)
        #expect(cancelled.yield(.text("x")) == .terminated)
    }

    /// A writer parked in `next()`, as the connection's writer task is between frames.
    private func parkedWriter(_ queue: OutboundQueue) async -> Task<[OutboundFrame]?, Never> {
        let writer = Task { await queue.next() }
        for _ in 0..<200 where !queue.lend() { try? await Task.sleep(for: .milliseconds(5)) }
        return writer
    }

    @Test("a loan: the reader writes what was queued, the idle writer is not woken; later frames go to the writer")
    func loan() async {
        let queue = OutboundQueue(capacity: 10)
        let writer = await parkedWriter(queue)
        queue.yield(.text("answer"))
        let lent = queue.takeLent()
        #expect(texts(lent) == ["answer"])
        lent.forEach { _ in queue.taken() }
        queue.yield(.text("meanwhile"))  // while the reader writes: waits for it
        queue.endLoan()
        #expect(texts(await writer.value) == ["meanwhile"])
        #expect(queue.yield(.text("more")) == .enqueued)
        #expect(texts(await queue.next()) == ["more"])
    }

    @Test("a loan ends at once on a close frame or past the limit; a busy writer lends nothing")
    func loanLimits() async {
        let closing = OutboundQueue(capacity: 100)
        let writer = await parkedWriter(closing)
        closing.yield(.text("a"))
        closing.yield(.close(.goingAway, "bye"))
        #expect(texts(await writer.value) == ["a", "close: bye"])
        #expect(closing.takeLent().isEmpty)
        closing.endLoan()

        let flooded = OutboundQueue(capacity: 100)
        let flooding = await parkedWriter(flooded)
        for index in 0...OutboundQueue.loanLimit { flooded.yield(.text("\(index)")) }
        #expect(await flooding.value?.count == OutboundQueue.loanLimit + 1)
        #expect(flooded.takeLent().isEmpty)

        let busy = OutboundQueue(capacity: 10)
        busy.yield(.text("queued"))
        #expect(busy.lend() == false)
    }

    @Test("finish during a loan: the writer gets what is left, then the end")
    func finishDuringLoan() async {
        let queue = OutboundQueue(capacity: 10)
        let writer = await parkedWriter(queue)
        queue.yield(.text("a"))
        queue.finish()
        queue.endLoan()
        #expect(texts(await writer.value) == ["a"])
        #expect(await queue.next() == nil)
    }
}

/// A clock the test moves by hand.
private final class ManualClock: Sendable {
    private let instant = Mutex(ContinuousClock.now)

    /// The current time.
    var read: @Sendable () -> ContinuousClock.Instant {
        { [self] in instant.withLock { $0 } }
    }

    func advance(by duration: Duration) {
        instant.withLock { $0 += duration }
    }
}
