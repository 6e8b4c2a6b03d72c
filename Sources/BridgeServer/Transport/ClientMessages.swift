import NIOCore
import Synchronization

/// The messages of one WebSocket connection on their way from its event loop (``WebSocketConnectionHandler``) to the
/// task that hands them to the hub, with backpressure: the handler holds reads while ``highWater`` messages wait, and
/// the task resumes them once it is down to ``lowWater``.
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

    private let stream: AsyncStream<Message>
    private let continuation: AsyncStream<Message>.Continuation
    /// Messages yielded and not yet taken.
    private let waiting = Atomic<Int>(0)
    /// The handler holds its reads; whoever clears this resumes them.
    private let held = Atomic<Bool>(false)
    private let lowWaterHandler = Mutex<(@Sendable () -> Void)?>(nil)

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: Message.self)
    }

    /// Called (on the consuming task) when reads were held and the waiting messages are down to ``lowWater``.
    var onLowWater: (@Sendable () -> Void)? {
        get { lowWaterHandler.withLock { $0 } }
        set { lowWaterHandler.withLock { $0 = newValue } }
    }

    /// Hands a message on (the event loop).
    func yield(_ message: Message) {
        waiting.add(1, ordering: .sequentiallyConsistent)
        continuation.yield(message)
    }

    /// No more messages: the iteration ends after those waiting.
    func finish() {
        continuation.finish()
    }

    /// Whether the handler should hold its reads now (``highWater`` messages wait). When this returns `true`,
    /// ``onLowWater`` is called once they are down to ``lowWater``.
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

    /// Iterates the messages (once).
    struct AsyncIterator: AsyncIteratorProtocol {
        fileprivate let messages: ClientMessages
        fileprivate var base: AsyncStream<Message>.Iterator

        mutating func next() async -> Message? {
            guard let message = await base.next() else { return nil }
            messages.taken()
            return message
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(messages: self, base: stream.makeAsyncIterator())
    }
}
