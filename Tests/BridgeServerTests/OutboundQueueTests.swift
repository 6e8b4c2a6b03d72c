import BridgeTestKit
import NIOCore
import Synchronization
import Testing
@testable import BridgeServer

/// A connection as the queue sees it: jobs run when the test says (an event loop), writes complete when it says
/// (a peer reading).
final class RecordingFrameWriter: FrameWriter {
    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var writes: [[String]] = []
        var completions: [@Sendable () -> Void] = []
        var closed = 0
    }

    private let state = Mutex(State())

    var writes: [[String]] { state.withLock { $0.writes } }
    var closed: Int { state.withLock { $0.closed } }
    var pendingJobs: Int { state.withLock { $0.jobs.count } }

    func execute(_ body: @escaping @Sendable () -> Void) {
        state.withLock { $0.jobs.append(body) }
    }

    func write(_ frames: [ByteBuffer], completed: @escaping @Sendable () -> Void) {
        state.withLock {
            $0.writes.append(frames.map { String(buffer: $0) })
            $0.completions.append(completed)
        }
    }

    func close() {
        state.withLock { $0.closed += 1 }
    }

    /// Runs the jobs queued so far, in order (the event loop's turn).
    func runJobs() {
        let jobs = state.withLock { state in
            defer { state.jobs = [] }
            return state.jobs
        }
        for job in jobs { job() }
    }

    /// Completes the oldest write not completed yet (the peer took it).
    func completeOldest() {
        let completion = state.withLock { $0.completions.isEmpty ? nil : $0.completions.removeFirst() }
        completion?()
    }
}

@Suite("A client's outbound queue", .tags(.unit))
struct OutboundQueueTests {
    private func attached(_ queue: OutboundQueue) -> RecordingFrameWriter {
        let writer = RecordingFrameWriter()
        queue.attach(writer)
        return writer
    }

    @Test("frames go out in order, everything queued before the event loop's job in one write; one job per batch")
    func order() {
        let queue = OutboundQueue(capacity: 10)
        let writer = attached(queue)
        #expect(queue.yield(.text("a")) == .enqueued)
        #expect(queue.yield(.text("b")) == .enqueued)
        #expect(writer.pendingJobs == 1)
        writer.runJobs()
        #expect(queue.yield(.text("c")) == .enqueued)
        writer.runJobs()
        #expect(writer.writes == [["a", "b"], ["c"]])
    }

    @Test("frames queued before the queue has its connection go out once it has")
    func beforeAttach() {
        let queue = OutboundQueue(capacity: 10)
        queue.yield(.text("early"))
        let writer = attached(queue)
        writer.runJobs()
        #expect(writer.writes == [["early"]])
    }

    @Test("past capacity, written frames that waited stallTimeout for the peer make the client stuck; completed frames no longer count")
    func capacity() {
        let clock = ManualClock()
        let queue = OutboundQueue(capacity: 2, hardCapacity: 4, stallTimeout: .seconds(2), clock: clock)
        let writer = attached(queue)
        for text in ["a", "b", "c"] { #expect(queue.yield(.text(text)) == .enqueued) }
        writer.runJobs()  // written; the peer has not taken them
        #expect(queue.yield(.text("d")) == .enqueued)  // past capacity, but the write just started: not stuck
        #expect(queue.stuckDeadline == clock.now + .seconds(2))
        clock.advance(by: .seconds(3))  // the writes have waited 3 s for the peer
        #expect(queue.isStuck)
        #expect(queue.yield(.text("e")) == .dropped)
        writer.completeOldest()  // the peer took them after all
        #expect(!queue.isStuck)
        #expect(queue.yield(.text("e")) == .enqueued)
    }

    @Test("a client that keeps taking may fall behind up to the hard capacity, not further")
    func slowReader() {
        let clock = ManualClock()
        let queue = OutboundQueue(capacity: 2, hardCapacity: 4, stallTimeout: .seconds(2), clock: clock)
        let writer = attached(queue)
        for text in ["a", "b", "c", "d"] { #expect(queue.yield(.text(text)) == .enqueued) }
        #expect(queue.yield(.text("e")) == .dropped)  // the hard limit, whatever the peer does
        writer.runJobs()
        clock.advance(by: .seconds(1))  // slow, but under the stall timeout
        writer.completeOldest()
        #expect(!queue.isStuck)
        for text in ["e", "f", "g", "h"] { #expect(queue.yield(.text(text)) == .enqueued) }
        #expect(queue.yield(.text("i")) == .dropped)
    }

    @Test("frames the event loop has not written yet never make a client stuck: a busy bridge is not the client's fault")
    func notWritten() {
        let clock = ManualClock()
        let queue = OutboundQueue(capacity: 2, hardCapacity: 4, stallTimeout: .seconds(2), clock: clock)
        _ = attached(queue)
        for text in ["a", "b", "c"] { #expect(queue.yield(.text(text)) == .enqueued) }
        clock.advance(by: .seconds(60))
        #expect(!queue.isStuck)
        #expect(queue.stuckDeadline == nil)
        #expect(queue.yield(.text("d")) == .enqueued)
    }
}
