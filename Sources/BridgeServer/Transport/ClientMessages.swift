import NIOCore
import Synchronization

/// The messages of one WebSocket connection on their way from its event loop (``WebSocketConnectionHandler``) to the
/// task that hands them to the hub, with backpressure: the handler holds reads while ``highWater`` messages wait, and
/// the task resumes them once it is down to ``lowWater``.
///
/// One producer (the event loop) and one consumer (the connection's task, which iterates once). A message yielded
/// while the task waits resumes it directly; otherwise it waits in a ring buffer. This is a queue of its own rather
/// than an `AsyncStream`: the standard library's stream runs unspecialized generic code for every element (its
/// `yield` alone was ~6% of the server's CPU per round trip over wss in issue 32's profile).
///
/// After ``finish()`` the messages already waiting are still delivered, then the iteration ends; messages yielded
/// after it are dropped. When the consuming task is cancelled, the iteration ends at once (what waits is dropped).
final class ClientMessages: AsyncSequence, Sendable {
    /// A whole WebSocket message.
    enum Message: Sendable {
        case text(ByteBuffer)
        case binary(ByteBuffer)
    }

    /// Messages waiting before the handler stops reading the socket.
    static let highWater = 16
    /// Messages waiting when reading resumes.
    static let lowWater = 4

    private struct State {
        /// Messages yielded and not yet taken, oldest first.
        var buffer = CircularBuffer<Message>(initialCapacity: 4)
        /// The consuming task, waiting for a message.
        var waiter: UnsafeContinuation<Message?, Never>?
        /// No more messages are taken (``finish()``, or the consumer was cancelled).
        var finished = false
    }

    private let state = Mutex(State())
    /// Messages yielded and not yet taken.
    private let waiting = Atomic<Int>(0)
    /// The handler holds its reads; whoever clears this resumes them.
    private let held = Atomic<Bool>(false)
    private let lowWaterHandler = Mutex<(@Sendable () -> Void)?>(nil)

    init() {}

    /// Called (on the consuming task) when reads were held and the waiting messages are down to ``lowWater``.
    var onLowWater: (@Sendable () -> Void)? {
        get { lowWaterHandler.withLock { $0 } }
        set { lowWaterHandler.withLock { $0 = newValue } }
    }

    /// Hands a message on (the event loop).
    func yield(_ message: Message) {
        waiting.add(1, ordering: .sequentiallyConsistent)
        let waiter = state.withLock { state -> UnsafeContinuation<Message?, Never>? in
            guard !state.finished else { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.buffer.append(message)
            return nil
        }
        waiter?.resume(returning: message)
    }

    /// No more messages: the iteration ends after those waiting.
    func finish() {
        let waiter = state.withLock { state -> UnsafeContinuation<Message?, Never>? in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// The consumer was cancelled: the iteration ends now.
    private func cancel() {
        let waiter = state.withLock { state -> UnsafeContinuation<Message?, Never>? in
            state.finished = true
            state.buffer.removeAll()
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// Whether the handler should hold its reads now (``highWater`` messages wait).
    ///
    /// When this returns `true`, ``onLowWater`` is called once they are down to ``lowWater``.
    func holdReads() -> Bool {
        guard waiting.load(ordering: .sequentiallyConsistent) >= ClientMessages.highWater else { return false }
        held.store(true, ordering: .sequentiallyConsistent)
        // The task may have taken them down meanwhile, before it could see `held`: then reading goes on now.
        if waiting.load(ordering: .sequentiallyConsistent) <= ClientMessages.lowWater,
           held.exchange(false, ordering: .sequentiallyConsistent) {
            return false
        }
        return true
    }

    private func taken() {
        let left = waiting.subtract(1, ordering: .sequentiallyConsistent).newValue
        if left <= ClientMessages.lowWater, held.load(ordering: .relaxed), held.exchange(false, ordering: .sequentiallyConsistent) {
            onLowWater?()
        }
    }

    /// The next message, waiting for one; `nil` once finished (after the messages waiting) or cancelled.
    private func next() async -> Message? {
        enum Now {
            case message(Message)
            case end
            case wait
        }
        let now = state.withLock { state -> Now in
            if let message = state.buffer.popFirst() { return .message(message) }
            return state.finished ? .end : .wait
        }
        switch now {
        case .message(let message):
            taken()
            return message
        case .end:
            return nil
        case .wait:
            let message = await withTaskCancellationHandler {
                await withUnsafeContinuation { (continuation: UnsafeContinuation<Message?, Never>) in
                    let ready = state.withLock { state -> Now in
                        if let message = state.buffer.popFirst() { return .message(message) }
                        if state.finished { return .end }
                        state.waiter = continuation
                        return .wait
                    }
                    switch ready {
                    case .message(let message): continuation.resume(returning: message)
                    case .end: continuation.resume(returning: nil)
                    case .wait: break
                    }
                }
            } onCancel: {
                cancel()
            }
            if message != nil { taken() }
            return message
        }
    }

    /// Iterates the messages (once).
    struct AsyncIterator: AsyncIteratorProtocol {
        fileprivate let messages: ClientMessages

        mutating func next() async -> Message? {
            await messages.next()
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(messages: self)
    }
}
