import Foundation
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// One SSE stream of a Streamable HTTP connection (the connection-scoped one, or one per session): the events routed
/// to it, in order, and where its current reader is.
///
/// Events not yet written to any reader wait here (the hub's ``OutboundQueue`` counts them as unwritten, so a client
/// that never reads its streams is cut off like a WebSocket that stops reading). Written events are kept for a while
/// (``retainedEvents``, ``retainedBytes``) so a reader that reconnects with `Last-Event-ID` gets exactly what it
/// missed.
///
/// Event ids (``Event/label``): on the connection's stream a number per stream from 1 (the RFD's per-stream cursor);
/// on a session's stream the bridge's `seq` of a `session/update` (`"41"`), and for any other message `"S.k"`, the
/// `k`-th message after the update `S` (`"0.k"` before the first update), so a client's `Last-Event-ID` names a place
/// in the session's history that outlives the stream (``StreamableHTTPEventID``).
struct StreamableHTTPStreamLog {
    /// An event: its place in the log, its SSE id, the message (or a comment's text), and what to tell the hub's
    /// queue once it is first written.
    ///
    /// Its SSE bytes are made when a reader writes it (``write(_:into:)``), straight into the reader's batch: the
    /// message is not copied on its way in.
    struct Event {
        /// Its place in this log (from 1), which orders readers' cursors.
        let number: Int
        /// Its SSE `id`, or `nil` for a comment.
        let label: String?
        /// The `seq` of a `session/update` on a session's stream.
        let seq: Int64?
        /// The message (the hub's frame, shared, not copied), or a comment's text.
        let message: ByteBuffer
        let completion: StreamableHTTPWriteCompletion?

        /// About how many bytes it takes on the stream.
        var size: Int { message.readableBytes + (label?.utf8.count ?? 0) + 16 }
    }

    /// What attaching a reader found.
    enum Attached: Equatable {
        /// No `Last-Event-ID`: the reader gets what no reader wrote yet.
        case fresh
        /// The stream still holds the event `Last-Event-ID` names: the reader gets everything after it.
        case held
        /// The stream no longer holds it (or never did): the reader gets what no reader wrote yet.
        case notHeld
    }

    /// Written events kept for a reconnecting reader: at most this many...
    static let retainedEvents = 512
    /// ...and at most this many bytes.
    static let retainedBytes = 4 << 20

    /// Whether ids are the session's `seq` (a session's stream) rather than numbers (the connection's).
    let sessionScoped: Bool
    /// The events, oldest first, from ``head`` on: the written ones kept for resumption, then the unwritten ones.
    ///
    /// Their numbers increase (with gaps where a replay took updates out), so a reader's place is found by bisection.
    private var events: [Event] = []
    /// Where the kept events start in ``events`` (those before were dropped; compacted now and then).
    private var head = 0
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
    /// The latest `seq` labelled on this stream, and how many other messages followed it.
    private var labelSeq: Int64 = 0
    private var labelFollowers = 0
    /// While the bridge replays a session's updates after a `Last-Event-ID` the stream no longer held: what arrived
    /// meanwhile, put in order when the replay ends (``endReplay(after:)``).
    private var arrivedDuringReplay: [(bytes: ByteBuffer, seq: Int64?, completion: StreamableHTTPWriteCompletion?)]?
    /// Wakes the current reader when there is something for it (or it was replaced, or the connection ended).
    var wake: CheckedContinuation<Void, Never>?
    /// A keepalive timer is scheduled (one at a time, not one per wait).
    var keepaliveScheduled = false

    /// A stream of a session (`sessionScoped`) or the connection's.
    init(sessionScoped: Bool = false) {
        self.sessionScoped = sessionScoped
    }

    /// Adds a message (`seq`: a `session/update`'s, on a session's stream); it waits while a replay is under way.
    mutating func append(_ message: ByteBuffer, seq: Int64?, completion: StreamableHTTPWriteCompletion?) {
        if arrivedDuringReplay != nil {
            arrivedDuringReplay?.append((message, seq, completion))
            return
        }
        let label: String
        if sessionScoped {
            if let seq {
                labelSeq = seq
                labelFollowers = 0
                label = String(seq)
            } else {
                labelFollowers += 1
                label = "\(labelSeq).\(labelFollowers)"
            }
        } else {
            label = String(nextNumber)
        }
        events.append(Event(number: nextNumber, label: label, seq: seq, message: message, completion: completion))
        nextNumber += 1
    }

    /// Adds an SSE comment (no id: a client's `Last-Event-ID` stays what it was).
    mutating func appendComment(_ text: String) {
        let line = text.replacingOccurrences(of: "\n", with: " ").replacingOccurrences(of: "\r", with: " ")
        events.append(Event(number: nextNumber, label: nil, seq: nil, message: ByteBuffer(string: line), completion: nil))
        nextNumber += 1
    }

    /// Attaches a new reader (the previous one ends); it resumes after the event `lastEventID` names when the stream
    /// still holds it, else gets everything not yet written.
    mutating func attach(_ token: UInt64, lastEventID: String?) -> Attached {
        reader = token
        cursor = written
        guard let lastEventID else { return .fresh }
        if let index = events[head...].lastIndex(where: { $0.label == lastEventID }) {
            cursor = events[index].number
            return .held
        }
        let oldest = head < events.count ? events[head].number : nextNumber
        if !sessionScoped, let number = Int(lastEventID), number >= oldest - 1, number < nextNumber {
            // The event just before the oldest kept one (or, with nothing kept, the latest).
            cursor = number
            return .held
        }
        return .notHeld
    }

    /// The reader resumes after `seq` from the bridge's replay (the stream no longer held the place): unwritten
    /// updates are dropped (the replay sends them again, in order) and their completions returned; other unwritten
    /// messages stay.
    ///
    /// Everything that arrives until ``endReplay(after:)`` waits.
    mutating func beginReplay() -> [StreamableHTTPWriteCompletion] {
        var dropped: [StreamableHTTPWriteCompletion] = []
        compact()
        events.removeAll { event in
            guard event.number > written, event.seq != nil else { return false }
            if let completion = event.completion { dropped.append(completion) }
            return true
        }
        arrivedDuringReplay = []
        return dropped
    }

    /// Whether a replay is under way.
    var replaying: Bool { arrivedDuringReplay != nil }

    /// The replay ended: what arrived meanwhile joins the stream, the updates first in `seq` order (each once, only
    /// those after `seq`), then the other messages as they came.
    ///
    /// Returns the completions of updates that were left out (they were there twice, or the reader had them).
    mutating func endReplay(after seq: Int64) -> [StreamableHTTPWriteCompletion] {
        guard let arrived = arrivedDuringReplay else { return [] }
        arrivedDuringReplay = nil
        var skipped: [StreamableHTTPWriteCompletion] = []
        var updates: [Int64: (ByteBuffer, StreamableHTTPWriteCompletion?)] = [:]
        for item in arrived {
            guard let itemSeq = item.seq else { continue }
            if itemSeq <= seq || updates[itemSeq] != nil {
                if let completion = item.completion { skipped.append(completion) }
            } else {
                updates[itemSeq] = (item.bytes, item.completion)
            }
        }
        for itemSeq in updates.keys.sorted() {
            if let (bytes, completion) = updates[itemSeq] { append(bytes, seq: itemSeq, completion: completion) }
        }
        for item in arrived where item.seq == nil {
            append(item.bytes, seq: nil, completion: item.completion)
        }
        return skipped
    }

    /// Detaches `token` if it is still the reader.
    mutating func detach(_ token: UInt64) {
        if reader == token { reader = nil }
    }

    /// The events the reader `token` has not been given yet (marked given), or `nil` when it is no longer the reader.
    mutating func take(for token: UInt64) -> [Event]? {
        guard reader == token else { return nil }
        guard let last = events.last, last.number > cursor else { return [] }
        // The first event after the cursor, by bisection (numbers increase).
        var low = head
        var high = events.count - 1
        while low < high {
            let middle = (low + high) / 2
            if events[middle].number > cursor { high = middle } else { low = middle + 1 }
        }
        let taken = Array(events[low...])
        cursor = last.number
        return taken
    }

    /// Whether the reader `token` has events it was not given yet.
    func hasEvents(for token: UInt64) -> Bool {
        reader == token && (events.last?.number ?? 0) > cursor
    }

    /// Drops the events before ``head`` from the array.
    private mutating func compact() {
        guard head > 0 else { return }
        events.removeFirst(head)
        head = 0
    }

    /// The reader wrote `events` (in order): returns the completions of those written for the first time, and drops
    /// what is past the retention bounds.
    mutating func wrote(_ batch: [Event]) -> [StreamableHTTPWriteCompletion] {
        var completions: [StreamableHTTPWriteCompletion] = []
        for event in batch where event.number > written {
            written = event.number
            writtenBytes += event.size
            writtenCount += 1
            if let completion = event.completion { completions.append(completion) }
        }
        while head < events.count, events[head].number <= written,
              writtenBytes > StreamableHTTPStreamLog.retainedBytes || writtenCount > StreamableHTTPStreamLog.retainedEvents {
            writtenBytes -= events[head].size
            writtenCount -= 1
            head += 1
        }
        // Now and then, not at every batch: the array shifts once for many events dropped.
        if head >= 256, head * 2 >= events.count { compact() }
        return completions
    }

    /// Completions of the events never written (the connection is ending: the hub's queue is told they are done).
    mutating func drainUnwritten() -> [StreamableHTTPWriteCompletion] {
        compact()
        var pending = events.filter { $0.number > written }.compactMap(\.completion)
        events.removeAll { $0.number > written }
        pending += (arrivedDuringReplay ?? []).compactMap(\.completion)
        arrivedDuringReplay = nil
        return pending
    }

    /// Writes `event` as SSE into `out`: a comment, or `id: <id>` and the message as `data:` (a line per line of the
    /// message; the bridge's JSON has none, but an agent's could if it were ever passed on raw).
    static func write(_ event: Event, into out: inout ByteBuffer) {
        guard let id = event.label else {
            out.writeStaticString(": ")
            out.writeImmutableBuffer(event.message)
            out.writeStaticString("\n\n")
            return
        }
        let message = event.message
        out.writeStaticString("id: ")
        out.writeString(id)
        out.writeStaticString("\ndata: ")
        let hasNewline = message.withUnsafeReadableBytes { raw in
            raw.baseAddress.map { memchr($0, 0x0A, raw.count) != nil } ?? false
        }
        if !hasNewline {
            // The common case (the bridge's JSON is one line): the message as it is.
            out.writeImmutableBuffer(message)
            out.writeStaticString("\n\n")
            return
        }
        let view = message.readableBytesView
        var start = view.startIndex
        while true {
            let end = view[start...].firstIndex(of: UInt8(ascii: "\n")) ?? view.endIndex
            var line = view[start..<end]
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            out.writeBytes(line)
            out.writeStaticString("\n")
            if end == view.endIndex { break }
            start = end + 1
            out.writeStaticString("data: ")
        }
        out.writeStaticString("\n")
    }
}
