import BridgeRPC
import Foundation
import Logging
import NIOCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One connection of the Streamable HTTP profile at `/acp` (ACP's "Streamable HTTP & WebSocket Transport" RFD): a hub
/// connection like a WebSocket's, whose client messages arrive as POSTs and whose server messages leave on SSE streams.
///
/// It is the hub connection's ``FrameWriter``: every message the hub queues for it is routed, as the RFD does, to
///
/// - the waiter of a request answered in the POST's own body (`initialize`);
/// - a session's stream: a message whose `sessionId` names a session the client opened a stream for, and the answer to
///   a session-scoped POST (one with `Acp-Session-Id`) of such a session;
/// - else the connection-scoped stream (among them the answers of `session/new`, `session/load` and
///   `session/resume`, which the client reads before it opens the session's stream).
///
/// A message counts as written for the hub's ``OutboundQueue`` once an SSE reader wrote it, so a client that does not
/// read its streams is cut off by the hub's rules for slow clients (``close()``), like a WebSocket that stops reading.
final class StreamableHTTPConnection: FrameWriter, Sendable {
    /// Which of the connection's streams.
    enum StreamKey: Hashable, Sendable {
        /// The connection-scoped stream.
        case connection
        /// A session's stream.
        case session(String)
    }

    /// What a reader gets next.
    enum Next {
        /// Events to write, in order.
        case events([StreamableHTTPStreamLog.Event])
        /// Nothing for a while: write a keepalive comment.
        case keepalive
        /// The stream ended (the connection ended, or a newer reader took the stream over), with a note for the client.
        case end(String?)
    }

    /// What opening a stream found.
    enum OpenResult {
        /// Read with this token; `resumed` says what became of `Last-Event-ID`; with `replayAfter` the bridge
        /// replays the session's updates after that `seq` into the stream (``replay(_:after:)``) before anything else.
        case opened(token: UInt64, resumed: StreamableHTTPStreamLog.Attached, replayAfter: Int64?)
        /// The session is not one this connection opened, loaded or resumed.
        case unknownSession
        /// The connection ended.
        case ended
    }

    private struct Route {
        let session: String
        /// The request came with `Acp-Session-Id`.
        let scoped: Bool
    }

    private struct State {
        var streams: [StreamKey: StreamableHTTPStreamLog] = [.connection: StreamableHTTPStreamLog()]
        /// Sessions the connection may address (opened, loaded or resumed through it).
        var attached: Set<String> = []
        /// Sessions whose messages go to their own stream (the client opened it once).
        var routed: Set<String> = [] {
            didSet { routedNeedles = routed.map(SessionNeedles.init) }
        }
        /// What a notification naming one of them has in its bytes.
        var routedNeedles: [SessionNeedles] = []
        /// Client requests naming a session, by id, until answered.
        var routes: [JSONRPCID: Route] = [:]
        /// Requests whose answer goes into a POST's body.
        var waiters: [JSONRPCID: EventLoopPromise<ByteBuffer?>] = [:]
        var nextReader: UInt64 = 1
        /// Readers attached now.
        var readers = 0
        /// When the client last did something (a request, a reader leaving).
        var lastActivity = NIODeadline.now()
        var ended = false
        var endNote: String?
    }

    /// The `Acp-Connection-Id`.
    let id: String
    /// The hub's id of the connection.
    let hubID: ConnectionID
    /// The paired device that opened it (`nil` without tokens): only it may use the connection.
    let owner: String?
    /// Where frames are routed and timers run.
    let eventLoop: any EventLoop
    private let hub: BridgeHub
    private let logger: Logger
    private let onEnd: @Sendable (String) -> Void
    private let state = Mutex(State())

    /// A connection `id` for the hub connection `hubID` of `owner`; `onEnd` is called once with `id` when it ends.
    init(id: String, hubID: ConnectionID, owner: String?, hub: BridgeHub, eventLoop: any EventLoop, logger: Logger,
         onEnd: @escaping @Sendable (String) -> Void) {
        self.id = id
        self.hubID = hubID
        self.owner = owner
        self.hub = hub
        self.eventLoop = eventLoop
        self.logger = logger
        self.onEnd = onEnd
    }

    // MARK: Client messages

    /// Sends a client message to the hub.
    ///
    /// A request naming a session is remembered so its answer is routed; `scoped` when it came with
    /// `Acp-Session-Id`.
    func receive(_ text: String, message: JSONRPCMessage, scoped: Bool) async {
        state.withLock { state in
            state.lastActivity = .now()
            if case .request(let request) = message, let session = StreamableHTTPConnection.sessionID(in: request.params) {
                state.routes[request.id] = Route(session: session, scoped: scoped)
            }
        }
        await hub.receive(text, from: hubID)
    }

    /// Sends `initialize` to the hub and waits for its answer (`nil` if the connection ended first).
    func initialize(_ text: String, id requestID: JSONRPCID) async -> ByteBuffer? {
        let promise = eventLoop.makePromise(of: ByteBuffer?.self)
        let ended = state.withLock { state -> Bool in
            if state.ended { return true }
            state.waiters[requestID] = promise
            return false
        }
        if ended { promise.succeed(nil) } else { await hub.receive(text, from: hubID) }
        return (try? await promise.futureResult.get()) ?? nil
    }

    /// Whether the connection may address `session` (it opened, loaded or resumed it).
    func isAttached(_ session: String) -> Bool {
        state.withLock { $0.attached.contains(session) }
    }

    // MARK: Readers

    /// Attaches a reader to a stream (a newer reader replaces an older one, which ends); with `lastEventID` it resumes
    /// after that event when the stream still holds it.
    ///
    /// On a session's stream that no longer holds it (or never did: a phone coming from a WebSocket with its last
    /// `seq`), the reader gets the session's updates after that `seq` from the bridge's replay buffer: the caller
    /// starts it with ``replay(_:after:)``.
    func open(_ key: StreamKey, lastEventID: String?) -> OpenResult {
        let (result, previous, dropped) = state.withLock { state -> (OpenResult, CheckedContinuation<Void, Never>?, [StreamableHTTPWriteCompletion]) in
            if state.ended { return (.ended, nil, []) }
            var sessionScoped = false
            if case .session(let session) = key {
                guard state.attached.contains(session) else { return (.unknownSession, nil, []) }
                state.routed.insert(session)
                sessionScoped = true
            }
            let token = state.nextReader
            state.nextReader += 1
            var log = state.streams[key] ?? StreamableHTTPStreamLog(sessionScoped: sessionScoped)
            if log.reader == nil { state.readers += 1 }
            let previous = log.wake
            log.wake = nil
            let attached = log.attach(token, lastEventID: lastEventID)
            var replayAfter: Int64?
            var dropped: [StreamableHTTPWriteCompletion] = []
            if attached == .notHeld, sessionScoped, !log.replaying, let lastEventID,
               let seq = StreamableHTTPConnection.seq(ofEventID: lastEventID) {
                replayAfter = seq
                dropped = log.beginReplay()
            }
            state.streams[key] = log
            return (.opened(token: token, resumed: attached, replayAfter: replayAfter), previous, dropped)
        }
        previous?.resume()
        for completion in dropped { completion.done() }
        return result
    }

    /// Asks the hub for `session`'s updates after `seq` (`_oa/session/resume` of the connection's own, as a phone
    /// coming back does), which go into the session's stream; what else arrives meanwhile waits and follows in order
    /// (``StreamableHTTPStreamLog/endReplay(after:)``).
    ///
    /// A gap (the bridge no longer holds `seq + 1`) is told on the stream as a comment, and the stream goes on live.
    func replay(_ session: String, after seq: Int64) async {
        let requestID = JSONRPCID.string("oa-sse-replay-\(UUID().uuidString.lowercased())")
        let promise = eventLoop.makePromise(of: ByteBuffer?.self)
        let ended = state.withLock { state -> Bool in
            if state.ended { return true }
            state.waiters[requestID] = promise
            return false
        }
        if ended {
            promise.succeed(nil)
        } else {
            let request = JSONRPCMessage.request(JSONRPCRequest(
                id: requestID, method: "_oa/session/resume", params: ["sessionId": .string(session), "lastSeq": .int(seq)]))
            await hub.receive(request.jsonText, from: hubID)
        }
        let answer = (try? await promise.futureResult.get()) ?? nil
        var note: String?
        if let answer, case .single(.message(.response(let response))) = JSONRPCFrame(parsing: String(buffer: answer)),
           let error = response.error {
            note = "no replay after \(seq): \(error.message) (\(error.code))"
            logger.notice("an SSE stream's Last-Event-ID could not be replayed", metadata: [
                "acp_connection": "\(id)", "session": "\(session)", "after": "\(seq)", "code": "\(error.code)"])
        }
        let key = StreamKey.session(session)
        let (skipped, wake) = state.withLock { state -> ([StreamableHTTPWriteCompletion], CheckedContinuation<Void, Never>?) in
            guard var log = state.streams[key] else { return ([], nil) }
            let skipped = log.endReplay(after: seq)
            if let note { log.appendComment(note) }
            let wake = log.wake
            log.wake = nil
            state.streams[key] = log
            return (skipped, wake)
        }
        for completion in skipped { completion.done() }
        wake?.resume()
    }

    /// The `seq` a session stream's event id names: `"41"` or `"41.2"` → 41; `nil` when it is not one.
    static func seq(ofEventID id: String) -> Int64? {
        let parts = id.trimmingCharacters(in: .whitespaces).split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let first = parts.first, first.allSatisfy(\.isASCII), let seq = Int64(first), seq >= 0 else { return nil }
        if parts.count == 2 {
            guard parts[1].allSatisfy(\.isASCII), let follower = Int(parts[1]), follower >= 1 else { return nil }
        }
        return seq
    }

    /// The reader `token` of `key` is gone.
    func close(_ key: StreamKey, reader token: UInt64) {
        state.withLock { state in
            guard state.streams[key]?.reader == token else { return }
            state.streams[key]?.detach(token)
            state.readers -= 1
            state.lastActivity = .now()
        }
    }

    /// Ends the connection at every `interval` check that finds it without a reader and without a request for
    /// `timeout` (a client that went away without `DELETE`); checks run on the connection's event loop.
    func watchIdle(timeout: TimeAmount, interval: TimeAmount) {
        eventLoop.scheduleTask(in: interval) { [self] in
            let idle = state.withLock { state -> Bool? in
                if state.ended { return nil }
                return state.readers == 0 && NIODeadline.now() - state.lastActivity >= timeout
            }
            switch idle {
            case nil: return
            case true?: end(note: "closed: no stream and no request for \(timeout.nanoseconds / 1_000_000_000) s")
            case false?: watchIdle(timeout: timeout, interval: interval)
            }
        }
    }

    /// What the reader `token` of `key` writes next; waits up to `keepalive` for it.
    func next(_ key: StreamKey, reader token: UInt64, keepalive: TimeAmount) async -> Next {
        var waited = false
        while true {
            let taken = state.withLock { state -> Next? in
                if state.ended { return .end(state.endNote) }
                guard let events = state.streams[key]?.take(for: token) else { return .end("replaced by a newer stream") }
                return events.isEmpty ? nil : .events(events)
            }
            if let taken { return taken }
            if waited { return .keepalive }
            waited = true
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let (ready, schedule) = state.withLock { state -> (Bool, Bool) in
                    guard !state.ended, let log = state.streams[key], log.reader == token, !log.hasEvents(for: token)
                    else { return (true, false) }
                    state.streams[key]?.wake = continuation
                    // One keepalive timer at a time per stream, not one per wait (a busy stream waits thousands of
                    // times a second); one that fires early only sends an early comment.
                    let schedule = !log.keepaliveScheduled
                    state.streams[key]?.keepaliveScheduled = true
                    return (false, schedule)
                }
                if ready {
                    continuation.resume()
                    return
                }
                guard schedule else { return }
                eventLoop.scheduleTask(in: keepalive) { [self] in
                    let waiting = state.withLock { state -> CheckedContinuation<Void, Never>? in
                        state.streams[key]?.keepaliveScheduled = false
                        guard let wake = state.streams[key]?.wake else { return nil }
                        state.streams[key]?.wake = nil
                        return wake
                    }
                    waiting?.resume()
                }
            }
        }
    }

    /// What the reader `token` of `key` has not been given yet, without waiting (`nil` when nothing).
    func taken(_ key: StreamKey, reader token: UInt64) -> Next? {
        state.withLock { state -> Next? in
            guard !state.ended, let events = state.streams[key]?.take(for: token), !events.isEmpty else { return nil }
            return .events(events)
        }
    }

    /// The reader wrote `events` of `key`.
    func wrote(_ events: [StreamableHTTPStreamLog.Event], on key: StreamKey) {
        let completions = state.withLock { state in state.streams[key]?.wrote(events) ?? [] }
        for completion in completions { completion.done() }
    }

    // MARK: FrameWriter (the hub's side)

    func execute(_ body: @escaping @Sendable () -> Void) {
        eventLoop.execute(body)
    }

    func write(_ frames: [ByteBuffer], completed: @escaping @Sendable () -> Void) {
        guard !frames.isEmpty else { return completed() }
        let completion = StreamableHTTPWriteCompletion(count: frames.count, completed: completed)
        // A notification is routed by the session ids in its bytes (the hub writes its envelope first, in a fixed
        // order); everything else (answers, the agent's requests: few) is parsed.
        let messages = frames.map { frame -> Parsed in
            if frame.readableBytesView.starts(with: StreamableHTTPConnection.notificationPrefix) { return .notification }
            guard case .single(.message(let message)) = JSONRPCFrame(parsing: String(buffer: frame)) else { return .message(nil) }
            return .message(message)
        }
        var done = 0
        var wakes: [CheckedContinuation<Void, Never>] = []
        var answers: [(EventLoopPromise<ByteBuffer?>, ByteBuffer)] = []
        state.withLock { state in
            guard !state.ended else {
                done = frames.count
                return
            }
            for (frame, parsed) in zip(frames, messages) {
                let destination: Destination
                switch parsed {
                case .notification: destination = .stream(StreamableHTTPConnection.sessionStream(of: frame, among: state.routedNeedles))
                case .message(let message): destination = route(message, in: &state)
                }
                switch destination {
                case .waiter(let promise):
                    answers.append((promise, frame))
                    done += 1
                case .stream(let key):
                    // In place (not a copy of the log written back): appending to a copy would copy its events.
                    let sessionScoped = key != .connection
                    let seq = sessionScoped ? StreamableHTTPConnection.updateSeq(of: frame) : nil
                    state.streams[key, default: StreamableHTTPStreamLog(sessionScoped: sessionScoped)]
                        .append(frame, seq: seq, completion: completion)
                    if let wake = state.streams[key]?.wake {
                        state.streams[key]?.wake = nil
                        wakes.append(wake)
                    }
                }
            }
        }
        for wake in wakes { wake.resume() }
        for (promise, frame) in answers { promise.succeed(frame) }
        for _ in 0..<done { completion.done() }
    }

    /// The hub cut the connection off (its client stopped reading): it ends at once.
    func close() {
        end(note: "closed: the client was not reading its streams")
    }

    /// The hub closed the connection (shutdown, token expiry, revocation, no `initialize` in time).
    func hubClosed(_ kind: OutboundFrame.CloseKind, _ reason: String) {
        end(note: "closed (\(kind.code)): \(reason)")
    }

    /// Ends the connection: readers end with `note`, unwritten messages are dropped, the hub forgets it.
    func end(note: String) {
        let ending = state.withLock { state -> (wakes: [CheckedContinuation<Void, Never>], waiters: [EventLoopPromise<ByteBuffer?>], completions: [StreamableHTTPWriteCompletion])? in
            guard !state.ended else { return nil }
            state.ended = true
            state.endNote = note
            var wakes: [CheckedContinuation<Void, Never>] = []
            var completions: [StreamableHTTPWriteCompletion] = []
            for key in state.streams.keys {
                if let wake = state.streams[key]?.wake { wakes.append(wake) }
                state.streams[key]?.wake = nil
                completions += state.streams[key]?.drainUnwritten() ?? []
            }
            let waiters = Array(state.waiters.values)
            state.waiters = [:]
            return (wakes, waiters, completions)
        }
        guard let ending else { return }
        logger.debug("streamable HTTP connection ended", metadata: ["acp_connection": "\(id)", "reason": "\(note)"])
        for wake in ending.wakes { wake.resume() }
        for waiter in ending.waiters { waiter.succeed(nil) }
        for completion in ending.completions { completion.done() }
        onEnd(id)
        // The hub forgets the connection in its run group (an errand), not in a task of its own.
        hub.post(.disconnect(hubID))
    }

    // MARK: Routing

    /// How the hub writes every notification.
    static let notificationPrefix = Array(#"{"jsonrpc":"2.0","method":"#.utf8)

    private enum Parsed {
        /// A notification, routed by its bytes.
        case notification
        /// Anything else, parsed (`nil`: not one message).
        case message(JSONRPCMessage?)
    }

    /// The bytes that name a session in a notification: `"sessionId":"…"`, or the seed dialect's `"session_id":"…"`.
    struct SessionNeedles {
        let session: String
        let needles: [[UInt8]]

        init(_ session: String) {
            self.session = session
            self.needles = ["sessionId", "session_id"].map { Array("\"\($0)\":\"\(session)\"".utf8) }
        }
    }

    /// The stream of the session among `routed` that a notification's bytes name, else the connection's.
    static func sessionStream(of frame: ByteBuffer, among routed: [SessionNeedles]) -> StreamKey {
        guard !routed.isEmpty else { return .connection }
        return frame.withUnsafeReadableBytes { raw -> StreamKey in
            guard let base = raw.baseAddress else { return .connection }
            for entry in routed {
                for needle in entry.needles where contains(UnsafeRawBufferPointer(start: base, count: raw.count), needle) {
                    return .session(entry.session)
                }
            }
            return .connection
        }
    }

    /// Whether `bytes` contain `needle` (memchr for its first byte, memcmp for the rest).
    static func contains(_ bytes: UnsafeRawBufferPointer, _ needle: [UInt8]) -> Bool {
        guard let first = needle.first, let base = bytes.baseAddress, needle.count <= bytes.count else { return false }
        return needle.withUnsafeBytes { pattern -> Bool in
            guard let patternBase = pattern.baseAddress else { return false }
            var offset = 0
            let last = bytes.count - needle.count
            while offset <= last {
                guard let hit = memchr(base + offset, Int32(first), last - offset + 1) else { return false }
                let at = base.distance(to: UnsafeRawPointer(hit))
                if memcmp(base + at, patternBase, needle.count) == 0 { return true }
                offset = at + 1
            }
            return false
        }
    }

    private enum Destination {
        case waiter(EventLoopPromise<ByteBuffer?>)
        case stream(StreamKey)
    }

    private func route(_ message: JSONRPCMessage?, in state: inout State) -> Destination {
        switch message {
        case .response(let response)?:
            if let waiter = state.waiters.removeValue(forKey: response.id) { return .waiter(waiter) }
            let route = state.routes.removeValue(forKey: response.id)
            if let established = StreamableHTTPConnection.sessionID(in: response.result) {
                // session/new (and forks): the client opens the session's stream once it reads this.
                state.attached.insert(established)
                return .stream(.connection)
            }
            guard let route else { return .stream(.connection) }
            if response.error == nil { state.attached.insert(route.session) }
            return route.scoped && state.routed.contains(route.session) ? .stream(.session(route.session)) : .stream(.connection)
        case .request(let request)?:
            return destination(for: request.params, in: state)
        case .notification(let notification)?:
            return destination(for: notification.params, in: state)
        case nil:
            return .stream(.connection)
        }
    }

    private func destination(for params: JSONValue?, in state: State) -> Destination {
        guard let session = StreamableHTTPConnection.sessionID(in: params), state.routed.contains(session) else {
            return .stream(.connection)
        }
        return .stream(.session(session))
    }

    /// The `sessionId` (ACP) or `session_id` (seed dialect) member of `value`.
    static func sessionID(in value: JSONValue?) -> String? {
        value?["sessionId"]?.stringValue ?? value?["session_id"]?.stringValue
    }

    /// How the hub writes a `session/update`'s envelope.
    static let updatePrefix = Array(#"{"jsonrpc":"2.0","method":"session/update","params":"#.utf8)
    /// How it writes one made of the agent's bytes with `_meta.seq` spliced in first (``SplicedUpdate``).
    static let splicedUpdatePrefix = Array(#"{"jsonrpc":"2.0","method":"session/update","params":{"_meta":{"seq":"#.utf8)

    /// The `_meta.seq` of a `session/update` frame (read from the bytes when it comes first, else parsed); `nil` for
    /// any other message.
    static func updateSeq(of frame: ByteBuffer) -> Int64? {
        let bytes = frame.readableBytesView
        guard bytes.starts(with: updatePrefix) else { return nil }
        if bytes.starts(with: splicedUpdatePrefix) {
            var seq: Int64 = 0
            var digits = 0
            for byte in bytes.dropFirst(splicedUpdatePrefix.count) {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9"), digits < 18 else { break }
                seq = seq * 10 + Int64(byte - UInt8(ascii: "0"))
                digits += 1
            }
            if digits > 0 { return seq }
        }
        guard case .single(.message(.notification(let notification))) = JSONRPCFrame(parsing: String(buffer: frame)) else { return nil }
        return notification.params?["_meta"]?["seq"]?.intValue
    }
}
