import BridgeTime
import NIOCore
import Synchronization

/// The frames on their way to one client, written straight into its connection (a ``FrameWriter``: the channel), with
/// no writer task.
///
/// The first frame queued while nothing waits schedules one job on the channel's event loop; by the time it runs,
/// every frame queued meanwhile goes out with it, with one flush. A frame counts as queued from ``yield(_:)`` until
/// its write completes (the socket took it), so what counts is what the client has not taken yet.
///
/// How far behind a client may fall: up to `capacity` frames always. Beyond that a frame is refused (`.dropped`, and
/// the hub cuts the client off) only if the client looks stuck: written frames have waited `stallTimeout` without
/// any of them completing (it stopped reading), or `hardCapacity` frames are queued. Frames not yet handed to the
/// channel (a busy event loop that has not run the job) are not the client's fault and never start that wait. A
/// client that reads, only more slowly than an agent bursts, keeps up to `hardCapacity`; one that stopped reading goes
/// once it is `capacity` behind. The same holds for bytes (issue 27.4: a client's outbound budget): up to
/// `byteCapacity` bytes always, more only while the client takes some within `stallTimeout`, never more than
/// `hardByteCapacity` (a single frame larger than that still goes out when nothing else is queued). With the defaults
/// (``defaultByteCapacity``, ``defaultHardByteCapacity``) a client that stopped reading holds at most 32 MiB of frames
/// for `stallTimeout` (beside the frames shared with other clients), and one that reads slowly at most 128 MiB.
/// What the connection's own WebSocket handler writes (pongs) is bounded there: it stops reading a client whose
/// channel is not writable (``WebSocketConnectionHandler``). ``isStuck`` says the same between frames, and ``stuckDeadline`` when that can first
/// be true, which the queue also tells its `stuckTimer` (the hub's stuck-client sweep) whenever the client is that far
/// behind with a write waiting: the sweep need not look while no client is. ``cutOff()`` drops what is queued and
/// closes the connection at once.
///
/// A close frame is not written here: it goes to the close handler given to ``attach(_:onClose:)`` (the connection
/// starts a task then, to send it through the WebSocket handler, so an idle connection keeps no task waiting for a
/// close), after the text frames queued before it were handed to the event loop; nothing queued after a close is sent.
final class OutboundQueue: Sendable {
    /// What ``yield(_:)`` did with a frame.
    enum YieldResult: Equatable {
        /// Queued.
        case enqueued
        /// Refused: the client is too far behind.
        case dropped
        /// Refused: the queue was finished.
        case terminated
    }

    private struct State {
        /// Frames not yet handed to the channel.
        var frames: [ByteBuffer] = []
        /// Frames yielded whose write has not completed.
        var queued = 0
        /// Their bytes.
        var bytes = 0
        /// Frames handed to the channel whose write has not completed.
        var inFlight = 0
        /// When the writes in flight last made progress (a batch went into an idle channel, or one completed).
        var progressAt: ContinuousClock.Instant?
        /// A job to write `frames` is scheduled on the event loop.
        var scheduled = false
        /// No more frames are taken (a close was queued, or the queue finished or was cut off).
        var finished = false
        var cut = false
        /// A close frame queued before the close handler was given (at attach).
        var close: (kind: OutboundFrame.CloseKind, reason: String)?
        /// Where a close goes when it is queued (given at attach).
        var closeHandler: (@Sendable (OutboundFrame.CloseKind, String) -> Void)?
        /// The connection, once attached.
        var writer: (any FrameWriter)?
    }

    /// Frames a client may always have queued.
    let capacity: Int
    /// Frames a client that is still reading may have queued.
    let hardCapacity: Int
    /// Bytes a client may always have queued.
    let byteCapacity: Int
    /// Bytes a client that is still reading may have queued.
    let hardByteCapacity: Int
    /// How long written frames may wait for the peer before a client past `capacity` counts as stuck.
    let stallTimeout: Duration
    /// The default ``byteCapacity``: 32 MiB (two messages of the default ``BridgeServerConfiguration/maxFrameSize``).
    static let defaultByteCapacity = 32 << 20
    /// The default ``hardByteCapacity``: 128 MiB.
    static let defaultHardByteCapacity = 128 << 20
    private let clock: any BridgeClock
    private let stuckTimer: SweepTimer?
    private let state: Mutex<State>

    /// A queue that refuses frames past `capacity` frames or `byteCapacity` bytes when written frames have waited
    /// `stallTimeout` on `clock`, and past `hardCapacity` (default: ten times `capacity`) frames or `hardByteCapacity`
    /// bytes in any case; `stuckTimer` is told when it may become stuck.
    ///
    /// Frames wait until ``attach(_:)`` gives the queue its connection.
    init(capacity: Int, hardCapacity: Int? = nil, byteCapacity: Int = OutboundQueue.defaultByteCapacity,
         hardByteCapacity: Int = OutboundQueue.defaultHardByteCapacity, stallTimeout: Duration = .seconds(2),
         clock: any BridgeClock = ContinuousClock(), stuckTimer: SweepTimer? = nil) {
        self.capacity = capacity
        self.hardCapacity = max(capacity, hardCapacity ?? capacity * 10)
        self.byteCapacity = byteCapacity
        self.hardByteCapacity = max(byteCapacity, hardByteCapacity)
        self.stallTimeout = stallTimeout
        self.clock = clock
        self.stuckTimer = stuckTimer
        self.state = Mutex(State())
    }

    /// Gives the queue its connection; frames queued so far go out now.
    ///
    /// With `onClose`, a close frame queued (now, or already) is handed to it once, after the frames before it were
    /// submitted to the connection; it is called on the thread that queued the close, so it should only start the
    /// sending. Without it, a close is not sent.
    func attach(_ writer: any FrameWriter, onClose: (@Sendable (OutboundFrame.CloseKind, String) -> Void)? = nil) {
        enum Next { case nothing, flush, close }
        var pendingClose: (OutboundFrame.CloseKind, String)?
        let next = state.withLock { state -> Next in
            state.writer = writer
            if state.cut { return .close }
            let flush = !state.scheduled && !state.frames.isEmpty
            if flush { state.scheduled = true }
            if let onClose {
                state.closeHandler = onClose
                pendingClose = state.close
                state.close = nil
            }
            return flush ? .flush : .nothing
        }
        switch next {
        case .nothing: break
        case .flush: writer.execute { self.flush() }
        case .close: writer.close()
        }
        if let pendingClose, let onClose { onClose(pendingClose.0, pendingClose.1) }
    }

    /// Queues a frame for the client.
    @discardableResult
    func yield(_ frame: OutboundFrame) -> YieldResult {
        let time = clock.now
        var stuckAt: ContinuousClock.Instant?
        var closeHandler: (@Sendable (OutboundFrame.CloseKind, String) -> Void, OutboundFrame.CloseKind, String)?
        let (result, writer) = state.withLock { state -> (YieldResult, (any FrameWriter)?) in
            if state.finished { return (.terminated, nil) }
            if state.queued >= capacity, state.queued >= hardCapacity || stalled(state, at: time) {
                return (.dropped, nil)
            }
            switch frame {
            case .textBytes(let bytes):
                let size = bytes.readableBytes
                if state.queued > 0,
                   state.bytes + size > hardByteCapacity || (state.bytes >= byteCapacity && stalled(state, at: time)) {
                    return (.dropped, nil)
                }
                let wasBelow = state.bytes < byteCapacity
                state.queued += 1
                state.bytes += size
                state.frames.append(bytes)
                if state.queued == capacity || (wasBelow && state.bytes >= byteCapacity) { stuckAt = stuckDeadline(state) }
            case .close(let kind, let reason):
                state.finished = true
                // The frames before it are in the channel or in a job queued on its event loop; the close, written
                // from a task, is queued on that loop after them.
                if let handler = state.closeHandler {
                    closeHandler = (handler, kind, reason)
                } else {
                    state.close = (kind, reason)
                }
                return (.enqueued, nil)
            }
            guard !state.scheduled, let writer = state.writer else { return (.enqueued, nil) }
            state.scheduled = true
            return (.enqueued, writer)
        }
        if let stuckAt { stuckTimer?.schedule(at: stuckAt) }
        writer?.execute { self.flush() }
        if let (handler, kind, reason) = closeHandler { handler(kind, reason) }
        return result
    }

    /// On the event loop: hands everything queued to the channel with one flush.
    private func flush() {
        let time = clock.now
        var stuckAt: ContinuousClock.Instant?
        let (writer, frames) = state.withLock { state -> ((any FrameWriter)?, [ByteBuffer]) in
            state.scheduled = false
            let frames = state.frames
            state.frames = []
            if !frames.isEmpty {
                if state.inFlight == 0 { state.progressAt = time }
                state.inFlight += frames.count
                if behind(state) { stuckAt = stuckDeadline(state) }
            }
            return (state.writer, frames)
        }
        if let writer, !frames.isEmpty {
            let count = frames.count
            var bytes = 0
            for frame in frames { bytes += frame.readableBytes }
            writer.write(frames) { [bytes] in self.completed(count, bytes: bytes) }
        }
        if let stuckAt { stuckTimer?.schedule(at: stuckAt) }
    }

    /// `count` writes of `bytes` bytes completed (or failed: the connection is going).
    private func completed(_ count: Int, bytes: Int) {
        let time = clock.now
        let stuckAt = state.withLock { state -> ContinuousClock.Instant? in
            state.inFlight = max(0, state.inFlight - count)
            state.queued = max(0, state.queued - count)
            state.bytes = max(0, state.bytes - bytes)
            state.progressAt = state.inFlight > 0 ? time : nil
            return stuckDeadline(state)
        }
        if let stuckAt { stuckTimer?.schedule(at: stuckAt) }
    }

    /// No more frames: what is queued is still written; no close is handed over after this.
    func finish() {
        state.withLock { state in
            state.finished = true
            state.closeHandler = nil
        }
    }

    /// Whether the queue takes no more frames (a close was queued, or it was finished or cut off).
    var isFinished: Bool {
        state.withLock { $0.finished }
    }

    /// Whether the client is `capacity` frames (or `byteCapacity` bytes) behind and written frames have waited
    /// `stallTimeout` for the peer.
    var isStuck: Bool {
        let time = clock.now
        return state.withLock { state in
            !state.cut && behind(state) && stalled(state, at: time)
        }
    }

    /// Bytes queued and not yet taken by the client.
    var queuedBytes: Int {
        state.withLock { $0.bytes }
    }

    /// When the client can first be stuck: the last progress of the writes in flight plus `stallTimeout`, if
    /// `capacity` frames (or `byteCapacity` bytes) are queued; `nil` if it cannot be before something else happens (more frames, a write).
    var stuckDeadline: ContinuousClock.Instant? {
        state.withLock { stuckDeadline($0) }
    }

    private func stuckDeadline(_ state: State) -> ContinuousClock.Instant? {
        guard !state.cut, behind(state), let progress = state.progressAt else { return nil }
        return progress + stallTimeout
    }

    /// Whether the client is far enough behind to be cut off if it also stalls.
    private func behind(_ state: State) -> Bool {
        state.queued >= capacity || state.bytes >= byteCapacity
    }

    private func stalled(_ state: State, at time: ContinuousClock.Instant) -> Bool {
        guard let progress = state.progressAt else { return false }
        return time - progress >= stallTimeout
    }

    /// Drops everything queued, refuses what comes, hands no close over and closes the connection at once (its peer
    /// may not be reading).
    func cutOff() {
        let writer = state.withLock { state -> (any FrameWriter)? in
            state.finished = true
            state.cut = true
            state.closeHandler = nil
            state.frames = []
            state.close = nil
            state.queued = 0
            state.bytes = 0
            return state.writer
        }
        writer?.close()
    }
}
