import NIOCore
import Synchronization
import Testing
@testable import BridgeServer

/// The closes a queue handed to its close handler, and how many flush jobs its connection had been given by then.
private final class CloseRecorder: Sendable {
    struct Close: Equatable {
        let kind: OutboundFrame.CloseKind
        let reason: String
        /// Jobs already submitted to the connection when the close was handed over.
        let jobsBefore: Int
    }

    private let closes = Mutex<[Close]>([])
    private let writer: RecordingFrameWriter

    init(_ writer: RecordingFrameWriter) {
        self.writer = writer
    }

    var recorded: [Close] { closes.withLock { $0 } }

    func handler() -> @Sendable (OutboundFrame.CloseKind, String) -> Void {
        { kind, reason in
            let jobs = self.writer.pendingJobs
            self.closes.withLock { $0.append(Close(kind: kind, reason: reason, jobsBefore: jobs)) }
        }
    }
}

/// Issue 14 goal 4: an idle connection keeps no task waiting for a close; the queue hands a close to a handler when
/// it is queued, after the frames before it.
@Suite("An idle connection's close goes to a handler, not a waiting task", .tags(.unit))
struct OutboundQueueIdleCloseTests {
    @Test("a close queued after attach goes to the handler once, after the frames before it were submitted")
    func closeAfterAttach() {
        let queue = OutboundQueue(capacity: 10)
        let writer = RecordingFrameWriter()
        let closes = CloseRecorder(writer)
        queue.attach(writer, onClose: closes.handler())
        #expect(closes.recorded.isEmpty)
        queue.yield(.text("a"))
        #expect(queue.yield(.close(.goingAway, "bye")) == .enqueued)
        #expect(closes.recorded == [.init(kind: .goingAway, reason: "bye", jobsBefore: 1)])
        #expect(queue.yield(.text("late")) == .terminated)
        #expect(queue.yield(.close(.policyViolation, "again")) == .terminated)
        writer.runJobs()
        #expect(writer.writes == [["a"]], "the frames before the close are written; nothing after it")
        #expect(closes.recorded.count == 1)
        #expect(writer.closed == 0, "the connection itself is not closed by the queue")
    }

    @Test("a close queued before attach is handed over at attach, after the frames before it")
    func closeBeforeAttach() {
        let queue = OutboundQueue(capacity: 10)
        queue.yield(.text("a"))
        queue.yield(.close(.tokenExpired, "expired"))
        let writer = RecordingFrameWriter()
        let closes = CloseRecorder(writer)
        queue.attach(writer, onClose: closes.handler())
        #expect(closes.recorded == [.init(kind: .tokenExpired, reason: "expired", jobsBefore: 1)])
        writer.runJobs()
        #expect(writer.writes == [["a"]])
    }

    @Test("a queue finished or cut off hands no close over; a cut-off closes the connection")
    func noCloseAfterTheEnd() {
        let finished = OutboundQueue(capacity: 5)
        let finishedWriter = RecordingFrameWriter()
        let finishedCloses = CloseRecorder(finishedWriter)
        finished.attach(finishedWriter, onClose: finishedCloses.handler())
        finished.finish()
        #expect(finished.yield(.close(.goingAway, "bye")) == .terminated)
        #expect(finishedCloses.recorded.isEmpty)

        let cut = OutboundQueue(capacity: 5)
        let cutWriter = RecordingFrameWriter()
        let cutCloses = CloseRecorder(cutWriter)
        cut.attach(cutWriter, onClose: cutCloses.handler())
        cut.yield(.text("dropped"))
        cut.cutOff()
        #expect(cut.yield(.close(.goingAway, "bye")) == .terminated)
        #expect(cutCloses.recorded.isEmpty)
        #expect(cutWriter.closed == 1)
        cutWriter.runJobs()
        #expect(cutWriter.writes.isEmpty)
    }
}
