import NIOCore

/// One SSE stream of a Streamable HTTP connection (the connection-scoped one, or one per session): the events routed
/// to it, numbered from 1, and where its current reader is.
///
/// Events not yet written to any reader wait here (the hub's ``OutboundQueue`` counts them as unwritten, so a client
/// that never reads its streams is cut off like a WebSocket that stops reading). Written events are kept for a while
/// (``retainedEvents``, ``retainedBytes``) so a reader that reconnects with `Last-Event-ID` gets exactly what it
/// missed.
struct StreamableHTTPStreamLog {
    /// An event: its number (the SSE `id`), its SSE bytes, and what to tell the hub's queue once it is first written.
    struct Event {
        let number: Int
        let bytes: ByteBuffer
        let completion: StreamableHTTPWriteCompletion?
    }

    /// Written events kept for a reconnecting reader: at most this many...
    static let retainedEvents = 512
    /// ...and at most this many bytes.
    static let retainedBytes = 4 << 20

    /// The events, oldest first: the written ones kept for resumption, then the unwritten ones.
    private(set) var events: [Event] = []
    /// The number the next event gets.
    private(set) var nextNumber = 1
    /// The highest number written to a reader at least once.
    private(set) var written = 0
    /// Bytes of the written events kept.
    private var writtenBytes = 0
    /// How many written events are kept.
    private var writtenCount = 0
    /// The current reader's token, if one is attached.
    private(set) var reader: UInt64?
    /// The last event number the current reader was given.
    private var cursor = 0
    /// Wakes the current reader when there is something for it (or it was replaced, or the connection ended).
    var wake: CheckedContinuation<Void, Never>?

    /// Adds an event; returns its number.
    mutating func append(_ bytes: ByteBuffer, completion: StreamableHTTPWriteCompletion?) -> Int {
        let number = nextNumber
        nextNumber += 1
        events.append(Event(number: number, bytes: bytes, completion: completion))
        return number
    }

    /// Attaches a new reader (the previous one ends); it resumes after `lastEventID` when that is still held, else
    /// gets everything not yet written. Returns whether the resumption point was still held (`true` without one).
    mutating func attach(_ token: UInt64, lastEventID: Int?) -> Bool {
        reader = token
        guard let lastEventID else {
            cursor = written
            return true
        }
        let oldest = events.first?.number ?? nextNumber
        if lastEventID >= oldest - 1 && lastEventID < nextNumber {
            cursor = lastEventID
            return true
        }
        cursor = written
        return false
    }

    /// Detaches `token` if it is still the reader.
    mutating func detach(_ token: UInt64) {
        if reader == token { reader = nil }
    }

    /// The events the reader `token` has not been given yet (marked given), or `nil` when it is no longer the reader.
    mutating func take(for token: UInt64) -> [Event]? {
        guard reader == token else { return nil }
        guard let start = events.firstIndex(where: { $0.number > cursor }) else { return [] }
        let taken = Array(events[start...])
        cursor = taken.last?.number ?? cursor
        return taken
    }

    /// Whether the reader `token` has events it was not given yet.
    func hasEvents(for token: UInt64) -> Bool {
        reader == token && (events.last?.number ?? 0) > cursor
    }

    /// The reader wrote `event`: returns its completion if this is its first write, and drops what is past the
    /// retention bounds.
    mutating func wrote(_ event: Event) -> StreamableHTTPWriteCompletion? {
        guard event.number > written else { return nil }
        written = event.number
        writtenBytes += event.bytes.readableBytes
        writtenCount += 1
        while let first = events.first, first.number <= written,
              writtenBytes > StreamableHTTPStreamLog.retainedBytes || writtenCount > StreamableHTTPStreamLog.retainedEvents {
            writtenBytes -= first.bytes.readableBytes
            writtenCount -= 1
            events.removeFirst()
        }
        return event.completion
    }

    /// Completions of the events never written (the connection is ending: the hub's queue is told they are done).
    mutating func drainUnwritten() -> [StreamableHTTPWriteCompletion] {
        let pending = events.filter { $0.number > written }.compactMap(\.completion)
        events.removeAll { $0.number > written }
        return pending
    }
}
