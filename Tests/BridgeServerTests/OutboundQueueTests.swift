@testable import BridgeServer
import NIOCore
import Synchronization
import Testing

@Suite("A client's outbound queue", .tags(.unit))
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
    func order() async throws {
        let queue = OutboundQueue(capacity: 10)
        #expect(queue.yield(.text("a")) == .enqueued)
        #expect(queue.yield(.text("b")) == .enqueued)
        #expect(texts(await queue.next()) == ["a", "b"])
        let later = Task { await queue.next() }
        try #require(await waitUntilParked(queue))
        #expect(queue.yield(.text("c")) == .enqueued)
        #expect(texts(await later.value) == ["c"])
    }

    @Test("past capacity, a write that waited stallTimeout for the peer makes the client stuck; taken frames no longer count")
    func capacity() async {
        let clock = ManualClock()
        let queue = OutboundQueue(capacity: 2, hardCapacity: 4, stallTimeout: .seconds(2), clock: clock)
        for text in ["a", "b", "c"] { #expect(queue.yield(.text(text)) == .enqueued) }
        let batch = await queue.next()
        #expect(texts(batch) == ["a", "b", "c"])
        queue.taken()  // writing "a"; "b" and "c" still count
        #expect(queue.yield(.text("d")) == .enqueued)  // two behind, but the write just started: not stuck
        clock.advance(by: .seconds(3))  // the write of "a" has waited 3 s for the peer
        #expect(queue.isStuck)
        #expect(queue.yield(.text("e")) == .dropped)
        queue.written()  // the peer took it after all
        #expect(!queue.isStuck)
    }

    @Test("a client that keeps taking may fall behind up to the hard capacity, not further")
    func slowReader() async {
        let clock = ManualClock()
        let queue = OutboundQueue(capacity: 2, hardCapacity: 4, stallTimeout: .seconds(2), clock: clock)
        for text in ["a", "b", "c", "d"] { #expect(queue.yield(.text(text)) == .enqueued) }
        #expect(queue.yield(.text("e")) == .dropped)  // the hard limit, whatever the writer does
        _ = await queue.next()
        queue.taken()
        clock.advance(by: .seconds(1))  // slow, but under the stall timeout
        queue.written()
        queue.taken()
        #expect(!queue.isStuck)
        #expect(queue.yield(.text("e")) == .enqueued)
        #expect(queue.yield(.text("f")) == .enqueued)  // four waiting again
        #expect(queue.yield(.text("g")) == .dropped)
    }

    @Test("a writer that is not writing is never stuck: a busy bridge that has not scheduled it is not the client's fault")
    func notWriting() async {
        let clock = ManualClock()
        let queue = OutboundQueue(capacity: 2, hardCapacity: 4, stallTimeout: .seconds(2), clock: clock)
        for text in ["a", "b", "c"] { #expect(queue.yield(.text(text)) == .enqueued) }
        clock.advance(by: .seconds(60))
        #expect(!queue.isStuck)
        #expect(queue.yield(.text("d")) == .enqueued)
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
    func wakeUps() async throws {
        let finished = OutboundQueue(capacity: 5)
        let ended = Task { await finished.next() }
        try #require(await waitUntilParked(finished))
        finished.finish()
        #expect(await ended.value == nil)

        let cancelled = OutboundQueue(capacity: 5)
        let writer = Task { await cancelled.next() }
        try #require(await waitUntilParked(cancelled))
        writer.cancel()
        #expect(await writer.value == nil)
        #expect(cancelled.yield(.text("x")) == .terminated)
    }

    /// Waits (10 s at most) until a writer is parked in `next()`: what is tested next wakes it, and cannot be
    /// taken by a writer that comes to `next()` later and finds it queued.
    private func waitUntilParked(_ queue: OutboundQueue) async -> Bool {
        for _ in 0..<2_000 where !queue.writerIsWaiting { try? await Task.sleep(for: .milliseconds(5)) }
        return queue.writerIsWaiting
    }

    /// A writer parked in `next()`, as the connection's writer task is between frames.
    /// The test's reader has lent itself (``OutboundQueue/lend()`` succeeded).
    private func parkedWriter(_ queue: OutboundQueue) async throws -> Task<[OutboundFrame]?, Never> {
        let writer = Task { await queue.next() }
        try #require(await waitUntilParked(queue))
        try #require(queue.lend())
        return writer
    }

    @Test("a loan: the reader writes what was queued, the idle writer is not woken; later frames go to the writer")
    func loan() async throws {
        let queue = OutboundQueue(capacity: 10)
        let writer = try await parkedWriter(queue)
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
    func loanLimits() async throws {
        let closing = OutboundQueue(capacity: 100)
        let writer = try await parkedWriter(closing)
        closing.yield(.text("a"))
        closing.yield(.close(.goingAway, "bye"))
        #expect(texts(await writer.value) == ["a", "close: bye"])
        #expect(closing.takeLent().isEmpty)
        closing.endLoan()

        let flooded = OutboundQueue(capacity: 100)
        let flooding = try await parkedWriter(flooded)
        for index in 0...OutboundQueue.loanLimit { flooded.yield(.text("\(index)")) }
        #expect(await flooding.value?.count == OutboundQueue.loanLimit + 1)
        #expect(flooded.takeLent().isEmpty)

        let busy = OutboundQueue(capacity: 10)
        busy.yield(.text("queued"))
        #expect(busy.lend() == false)
    }

    @Test("finish during a loan: the writer gets what is left, then the end")
    func finishDuringLoan() async throws {
        let queue = OutboundQueue(capacity: 10)
        let writer = try await parkedWriter(queue)
        queue.yield(.text("a"))
        queue.finish()
        queue.endLoan()
        #expect(texts(await writer.value) == ["a"])
        #expect(await queue.next() == nil)
    }
}
