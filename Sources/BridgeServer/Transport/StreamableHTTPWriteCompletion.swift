import Synchronization

/// Tells the hub's ``OutboundQueue`` that a batch it handed to a Streamable HTTP connection was written, once every
/// event of the batch was written to a reader (or dropped because the connection ended).
final class StreamableHTTPWriteCompletion: Sendable {
    private let remaining: Mutex<Int>
    private let completed: @Sendable () -> Void

    /// A completion for `count` events that calls `completed` after the last.
    init(count: Int, completed: @escaping @Sendable () -> Void) {
        self.remaining = Mutex(count)
        self.completed = completed
    }

    /// One event of the batch is done.
    func done() {
        let last = remaining.withLock { remaining -> Bool in
            remaining -= 1
            return remaining == 0
        }
        if last { completed() }
    }
}
