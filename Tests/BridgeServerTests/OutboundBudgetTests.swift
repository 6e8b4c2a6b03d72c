import BridgeTestKit
import NIOCore
import Testing
@testable import BridgeServer

/// A client's outbound budget in bytes (issue 27.4): the queue counted frames, so a few large frames from a client
/// that does not read grew the bridge's memory without bound.
@Suite("A client's outbound budget in bytes", .tags(.unit))
struct OutboundBudgetTests {
    static func frame(_ size: Int) -> OutboundFrame {
        .textBytes(ByteBuffer(repeating: UInt8(ascii: "x"), count: size))
    }

    @Test("past byteCapacity, a client whose writes stalled is refused; one that takes frames is not")
    func stalledBytes() {
        let clock = ManualClock()
        let queue = OutboundQueue(capacity: 1000, byteCapacity: 1000, hardByteCapacity: 10_000, stallTimeout: .seconds(2), clock: clock)
        let writer = RecordingFrameWriter()
        queue.attach(writer)
        #expect(queue.yield(Self.frame(600)) == .enqueued)
        #expect(queue.yield(Self.frame(600)) == .enqueued)
        writer.runJobs()
        #expect(queue.queuedBytes == 1200)
        #expect(queue.stuckDeadline != nil)
        clock.advance(by: .seconds(1))
        #expect(queue.yield(Self.frame(600)) == .enqueued)
        #expect(!queue.isStuck)
        clock.advance(by: .seconds(1))
        #expect(queue.isStuck)
        #expect(queue.yield(Self.frame(600)) == .dropped)
        // Once the peer takes the stalled write, the bytes no longer count.
        writer.completeOldest()
        #expect(queue.queuedBytes == 600)
        #expect(!queue.isStuck)
    }

    @Test("past hardByteCapacity a frame is refused even while the client reads; a lone large frame goes out")
    func hardBytes() {
        let queue = OutboundQueue(capacity: 1000, byteCapacity: 1000, hardByteCapacity: 4000)
        let writer = RecordingFrameWriter()
        queue.attach(writer)
        #expect(queue.yield(Self.frame(5000)) == .enqueued)
        writer.runJobs()
        writer.completeOldest()
        #expect(queue.queuedBytes == 0)
        for _ in 0..<4 { #expect(queue.yield(Self.frame(1000)) == .enqueued) }
        #expect(queue.yield(Self.frame(1)) == .dropped)
    }

    @Test("the default budget is 32 MiB while stalled and 128 MiB in any case")
    func defaults() {
        let queue = OutboundQueue(capacity: 10)
        #expect(queue.byteCapacity == 32 << 20 && queue.hardByteCapacity == 128 << 20)
    }
}
