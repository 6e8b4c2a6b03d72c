import Synchronization

/// The frames waiting for one client's writer.
///
/// A frame counts as queued until the writer takes it to write, and after ``finish()`` the writer still gets what is
/// queued, then the end. The writer takes everything queued in one go (one lock, and one wake-up only when it had run
/// dry), then marks each frame ``taken()`` as it starts writing it and ``written()`` once the write returned.
///
/// How far behind a client may fall: up to `capacity` frames always. Beyond that a frame is refused (`.dropped`, and
/// the hub cuts the client off) only if the client looks stuck: one write to it has been waiting `stallTimeout` for
/// the peer to take data (it stopped reading), or `hardCapacity` frames are queued. A writer that is merely slow to be
/// scheduled (a busy bridge) is not the client's fault and never counts. A client that reads, only more slowly than an
/// agent bursts, keeps up to `hardCapacity`; one that stopped reading goes once it is `capacity` behind. ``isStuck``
/// says the same between frames, and ``stuckDeadline`` when that can first be true, which the queue also tells its
/// `stuckTimer` (the hub's stuck-client sweep) when a write starts, or the queue reaches `capacity`, with the client
/// that far behind: the sweep need not look while no client is. ``cutOff()`` drops what is queued and wakes ``waitForCutOff()``, so the connection
/// can close even while its writer is blocked on a peer that does not read.
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
        /// When the write in progress started (between ``taken()`` and ``written()``).
        var writeStartedAt: ContinuousClock.Instant?
        /// Cut off: what was queued is dropped and the connection is to close at once.
        var cut = false
        var cutWaiter: CheckedContinuation<Void, Never>?
        var cutWaitCancelled = false
    }

    /// Frames queued during a loan beyond which the writer takes over.
    static let loanLimit = 16

    /// Frames a client may always have queued.
    let capacity: Int
    /// Frames a client that is still reading may have queued.
    let hardCapacity: Int
    /// How long one write may wait for the peer before a client past `capacity` counts as stuck.
    let stallTimeout: Duration
    private let clock: any BridgeClock
    private let stuckTimer: SweepTimer?
    private let state: Mutex<State>

    /// A queue that refuses frames past `capacity` when a write has waited `stallTimeout` on `clock`, and past
    /// `hardCapacity` (default: ten times `capacity`) in any case; `stuckTimer` is told when it may become stuck.
    init(capacity: Int, hardCapacity: Int? = nil, stallTimeout: Duration = .seconds(2),
         clock: any BridgeClock = ContinuousClock(), stuckTimer: SweepTimer? = nil) {
        self.capacity = capacity
        self.hardCapacity = max(capacity, hardCapacity ?? capacity * 10)
        self.stallTimeout = stallTimeout
        self.clock = clock
        self.stuckTimer = stuckTimer
        self.state = Mutex(State())
    }

    private func now() -> ContinuousClock.Instant { clock.now }

    /// Whether the writer is parked in ``next()`` waiting for frames (what a loan or a wake-up needs).
    var writerIsWaiting: Bool {
        state.withLock { $0.waiter != nil }
    }

    /// Queues a frame for the writer.
    @discardableResult
    func yield(_ frame: OutboundFrame) -> YieldResult {
        var stuckAt: ContinuousClock.Instant?
        defer { if let stuckAt { stuckTimer?.schedule(at: stuckAt) } }
        let (result, handover) = state.withLock { state -> (YieldResult, Handover?) in
            if state.finished { return (.terminated, nil) }
            if state.queued >= capacity, state.queued >= hardCapacity || stalled(state, at: now()) {
                return (.dropped, nil)
            }
            state.queued += 1
            if state.queued == capacity { stuckAt = stuckDeadline(state) }
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

    /// Whether the client is `capacity` frames behind and a write to it has waited `stallTimeout` for the peer.
    var isStuck: Bool {
        let time = now()
        return state.withLock { state in
            !state.finished && state.queued >= capacity && stalled(state, at: time)
        }
    }

    /// When the client can first be stuck: the write in progress plus `stallTimeout`, if `capacity` frames are queued;
    /// `nil` if it cannot be before something else happens (a write starts, more frames come).
    var stuckDeadline: ContinuousClock.Instant? {
        state.withLock { stuckDeadline($0) }
    }

    private func stuckDeadline(_ state: State) -> ContinuousClock.Instant? {
        guard !state.finished, state.queued >= capacity, let started = state.writeStartedAt else { return nil }
        return started + stallTimeout
    }

    private func stalled(_ state: State, at time: ContinuousClock.Instant) -> Bool {
        guard let started = state.writeStartedAt else { return false }
        return time - started >= stallTimeout
    }

    /// Drops everything queued, refuses what comes, ends the writer's ``next()`` and wakes ``waitForCutOff()``.
    func cutOff() {
        let (waiter, cutWaiter) = state.withLock { state -> (CheckedContinuation<[OutboundFrame]?, Never>?, CheckedContinuation<Void, Never>?) in
            state.finished = true
            state.cut = true
            state.frames = []
            state.queued = 0
            state.lent = false
            state.lentWriting = false
            defer {
                state.waiter = nil
                state.cutWaiter = nil
            }
            return (state.waiter, state.cutWaiter)
        }
        waiter?.resume(returning: nil)
        cutWaiter?.resume()
    }

    /// Returns once the queue is cut off (at once if it is already), or when the calling task is cancelled. One task
    /// waits at a time: the connection's.
    func waitForCutOff() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.cut || state.cutWaitCancelled { return true }
                    state.cutWaiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let continuation = state.withLock { state -> CheckedContinuation<Void, Never>? in
                state.cutWaitCancelled = true
                defer { state.cutWaiter = nil }
                return state.cutWaiter
            }
            continuation?.resume()
        }
    }

    /// A waiting writer and what to wake it with.
    private struct Handover {
        let continuation: CheckedContinuation<[OutboundFrame]?, Never>
        /// `nil`: the end.
        let frames: [OutboundFrame]?
    }

    /// The writer started writing one of the frames it took: it no longer counts as queued.
    func taken() {
        let time = now()
        let stuckAt = state.withLock { state in
            // After a cut-off the count restarted at zero while the writer may still hold frames it took.
            state.queued = max(0, state.queued - 1)
            state.writeStartedAt = time
            return stuckDeadline(state)
        }
        if let stuckAt { stuckTimer?.schedule(at: stuckAt) }
    }

    /// The write of the frame last ``taken()`` returned: the peer took it (or the kernel's buffer did).
    func written() {
        state.withLock { $0.writeStartedAt = nil }
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
