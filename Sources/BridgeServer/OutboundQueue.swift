import Synchronization

/// The frames waiting for one client's writer, at most `capacity` of them.
///
/// It behaves as the `AsyncStream` with `.bufferingOldest(capacity)` it replaces: a frame counts as queued until the
/// writer takes it to write, a frame that would make more than `capacity` is refused (`.dropped`), and after
/// ``finish()`` the writer still gets what is queued, then the end. What differs is the cost: the writer takes
/// everything queued in one go (one lock, and one wake-up only when it had run dry), then marks each frame
/// ``taken()`` as it starts writing it, so the count is the same as with the stream.
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
        var frames: [OutboundFrame] = []
        /// Frames yielded and not yet taken by the writer (including those it holds but has not started).
        var queued = 0
        var finished = false
        var waiter: CheckedContinuation<[OutboundFrame]?, Never>?
    }

    /// The most frames queued at once.
    let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// Queues a frame for the writer.
    @discardableResult
    func yield(_ frame: OutboundFrame) -> YieldResult {
        let (result, waiter) = state.withLock { state -> (YieldResult, CheckedContinuation<[OutboundFrame]?, Never>?) in
            if state.finished { return (.terminated, nil) }
            if state.queued >= capacity { return (.dropped, nil) }
            state.queued += 1
            if let waiter = state.waiter {
                state.waiter = nil
                return (.enqueued, waiter)
            }
            state.frames.append(frame)
            return (.enqueued, nil)
        }
        waiter?.resume(returning: [frame])
        return result
    }

    /// No more frames: the writer gets what is queued, then `nil`.
    func finish() {
        let waiter = state.withLock { state in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
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
