import Synchronization

/// The frames waiting for one client's writer, at most `capacity` of them.
///
/// It behaves as the `AsyncStream` with `.bufferingOldest(capacity)` it replaces: a frame counts as queued until the
/// writer takes it to write, a frame that would make more than `capacity` is refused (`.dropped`), and after
/// ``finish()`` the writer still gets what is queued, then the end. What differs is the cost: the writer takes
/// everything queued in one go (one lock, and one wake-up only when it had run dry), then marks each frame
/// ``taken()`` as it starts writing it, so the count is the same as with the stream.
///
/// A connection's reader may lend itself as the writer for the answers to one message (``lend()``, ``takeLent()``,
/// ``endLoan()``): if the writer is idle with nothing queued, frames queued meanwhile do not wake it, and the reader
/// writes them itself once the hub is done with the message, which saves a thread wake-up per answer. Until the reader
/// takes them, a close frame or more than ``loanLimit`` frames end the loan at once and wake the writer, so a loan
/// holds back little; once it took them, later frames wait for it to finish writing (order is kept).
final class OutboundQueue: Sendable {
    /// What ``yield(_:)`` did with a frame.
    enum YieldResult: Equatable {
        /// Queued.
        case enqueued
        /// Refused: `capacity` frames are already queued.
        case dropped
        /// Refused: the queue was finished (or its writer cancelled).
        case terminated
    }

    private struct State {
        /// Takes the waiting writer, with the queued frames (`nil`: finished and empty), if there is something for it.
        mutating func handOver() -> Handover? {
            guard let waiter, !frames.isEmpty || finished else { return nil }
            self.waiter = nil
            defer { frames = [] }
            return Handover(continuation: waiter, frames: frames.isEmpty ? nil : frames)
        }

        var frames: [OutboundFrame] = []
        /// Frames yielded and not yet taken by the writer (including those it holds but has not started).
        var queued = 0
        var finished = false
        var waiter: CheckedContinuation<[OutboundFrame]?, Never>?
        /// The reader writes the frames queued now (the writer is idle, waiting in `waiter`).
        var lent = false
        /// The reader took them and is writing them: nothing may go to the writer before it is done.
        var lentWriting = false
    }

    /// Frames queued during a loan beyond which the writer takes over.
    static let loanLimit = 16

    /// The most frames queued at once.
    let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// Queues a frame for the writer.
    @discardableResult
    func yield(_ frame: OutboundFrame) -> YieldResult {
        let (result, handover) = state.withLock { state -> (YieldResult, Handover?) in
            if state.finished { return (.terminated, nil) }
            if state.queued >= capacity { return (.dropped, nil) }
            state.queued += 1
            if state.lent {
                state.frames.append(frame)
                if state.lentWriting { return (.enqueued, nil) }
                var isClose = false
                if case .close = frame { isClose = true }
                if !isClose && state.frames.count <= OutboundQueue.loanLimit { return (.enqueued, nil) }
                // The writer takes over: a close must not wait for the reader, nor many frames.
                state.lent = false
                return (.enqueued, state.handOver())
            }
            if let waiter = state.waiter {
                state.waiter = nil
                return (.enqueued, Handover(continuation: waiter, frames: [frame]))
            }
            state.frames.append(frame)
            return (.enqueued, nil)
        }
        handover?.continuation.resume(returning: handover?.frames)
        return result
    }

    /// Starts a loan if the writer is idle with nothing queued; true if the reader is now the writer.
    func lend() -> Bool {
        state.withLock { state in
            guard !state.lent, state.waiter != nil, state.frames.isEmpty, !state.finished else { return false }
            state.lent = true
            return true
        }
    }

    /// The frames queued since ``lend()``, for the reader to write (marking each ``taken()``), if the loan still holds.
    func takeLent() -> [OutboundFrame] {
        state.withLock { state in
            guard state.lent else { return [] }
            state.lentWriting = true
            defer { state.frames = [] }
            return state.frames
        }
    }

    /// Ends a loan: the writer gets whatever was queued meanwhile (or the end, if finished).
    func endLoan() {
        let handover = state.withLock { state -> Handover? in
            guard state.lent else { return nil }
            state.lent = false
            state.lentWriting = false
            return state.handOver()
        }
        handover?.continuation.resume(returning: handover?.frames)
    }

    /// No more frames: the writer gets what is queued, then `nil`.
    func finish() {
        let waiter = state.withLock { state -> CheckedContinuation<[OutboundFrame]?, Never>? in
            state.finished = true
            // During a loan the writer waits for ``endLoan()``, which hands it what is left.
            if state.lent { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// A waiting writer and what to wake it with.
    private struct Handover {
        let continuation: CheckedContinuation<[OutboundFrame]?, Never>
        /// `nil`: the end.
        let frames: [OutboundFrame]?
    }

    /// The writer started writing one of the frames it took: it no longer counts as queued.
    func taken() {
        state.withLock { $0.queued -= 1 }
    }

    /// Everything queued, in order, waiting while there is nothing; `nil` once finished and drained, or when the
    /// calling task is cancelled (which also finishes the queue, as cancelling a stream's reader does).
    func next() async -> [OutboundFrame]? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<[OutboundFrame]?, Never>) in
                let ready = state.withLock { state -> [OutboundFrame]?? in
                    if !state.frames.isEmpty {
                        defer { state.frames = [] }
                        return .some(state.frames)
                    }
                    if state.finished || Task.isCancelled {
                        state.finished = true
                        return .some(nil)
                    }
                    state.waiter = continuation
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            finish()
        }
    }
}
