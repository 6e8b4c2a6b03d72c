// A minimal client of the bridge's Streamable HTTP profile at /acp (issue 28 item 6) on blocking loopback sockets,
// for the SSE figures beside the WebSocket ones: one socket for POSTs (HTTP/1.1 keep-alive), one per SSE stream.
// Reading and counting costs it next to nothing, as for RawWebSocket.

import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One HTTP/1.1 connection to 127.0.0.1 on a blocking socket (reads time out after 1 s).
final class RawHTTP: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible { var description: String }

    let port: Int
    private let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: 1 << 20)
    private var start = 0
    private var end = 0
    /// Decoded SSE bytes (a stream's body, chunked transfer coding removed); events[eventStart...] not yet split.
    private var events: [UInt8] = []
    private var eventStart = 0
    /// Bytes left of the chunk being read (0: a chunk-size line comes next).
    private var chunkLeft = 0

    init(port: Int) throws {
        self.port = port
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw Failure(description: "connect to 127.0.0.1:\(port): errno \(errno)")
        }
    }

    deinit { close(fd) }

    private func write(_ bytes: [UInt8]) throws {
        let sent = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == bytes.count else { throw Failure(description: "send failed (errno \(errno))") }
    }

    private enum ReadResult { case data, timeout, closed }

    private func readMore() -> ReadResult {
        if start > 0 {
            buffer.withUnsafeMutableBytes { raw in
                guard let base = raw.baseAddress else { return }
                memmove(base, base + start, end - start)
            }
            end -= start
            start = 0
        }
        if end == buffer.count { buffer.append(contentsOf: [UInt8](repeating: 0, count: buffer.count)) }
        let count = buffer.withUnsafeMutableBytes { raw in
            recv(fd, raw.baseAddress.map { $0 + end }, raw.count - end, 0)
        }
        if count > 0 {
            end += count
            return .data
        }
        if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { return .timeout }
        return .closed
    }

    /// Reads a response head; returns its status and header fields (names lowercased).
    private func readHead(until deadline: UInt64) throws -> (Int, [String: String]) {
        let headerEnd = Array("\r\n\r\n".utf8)
        while true {
            if let range = buffer[start..<end].firstRange(of: headerEnd) {
                let head = String(decoding: buffer[start..<range.lowerBound], as: UTF8.self)
                start = range.upperBound
                var lines = head.components(separatedBy: "\r\n")
                let status = Int(lines.removeFirst().split(separator: " ").dropFirst().first ?? "") ?? 0
                var fields: [String: String] = [:]
                for line in lines {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
                return (status, fields)
            }
            if now() > deadline || readMore() == .closed { throw Failure(description: "no response head") }
        }
    }

    /// POSTs `body` to /acp; returns the status, header fields and body (by Content-Length).
    func post(_ body: String, headers: [String: String] = [:], until deadline: UInt64) throws -> (Int, [String: String], String) {
        let payload = Array(body.utf8)
        var request = "POST /acp HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: application/json\r\nContent-Length: \(payload.count)\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        try write(Array((request + "\r\n").utf8) + payload)
        let (status, fields) = try readHead(until: deadline)
        let length = Int(fields["content-length"] ?? "0") ?? 0
        while end - start < length {
            if now() > deadline || readMore() == .closed { throw Failure(description: "short response body") }
        }
        let text = String(decoding: buffer[start..<(start + length)], as: UTF8.self)
        start += length
        return (status, fields, text)
    }

    /// Opens an SSE stream (`GET /acp`) on this connection; throws unless it is answered 200.
    func openStream(headers: [String: String], until deadline: UInt64) throws {
        var request = "GET /acp HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAccept: text/event-stream\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        try write(Array((request + "\r\n").utf8))
        let (status, _) = try readHead(until: deadline)
        guard status == 200 else { throw Failure(description: "stream answered \(status)") }
    }

    /// Moves the body bytes read so far (chunked transfer coding removed) into `events`.
    private func decodeChunks() {
        compactEvents()
        while start < end {
            if chunkLeft > 0 {
                let take = min(chunkLeft, end - start)
                events.append(contentsOf: buffer[start..<(start + take)])
                start += take
                chunkLeft -= take
                continue
            }
            // A chunk-size line (after the CRLF that ended the previous chunk, if any).
            guard let lineEnd = buffer[start..<end].firstRange(of: [13, 10]) else { return }
            let line = String(decoding: buffer[start..<lineEnd.lowerBound], as: UTF8.self)
            start = lineEnd.upperBound
            if line.isEmpty { continue }
            chunkLeft = Int(line.split(separator: ";").first ?? "", radix: 16) ?? 0
        }
    }

    /// The next SSE event's data (its last `data:` line; the bridge writes one), or nil at the deadline or the
    /// stream's end.
    func nextEvent(until deadline: UInt64) -> ArraySlice<UInt8>? {
        guard let range = nextEventData(until: deadline) else { return nil }
        return Array(events[range])[...]
    }

    /// Where the next event's data is in the decoded bytes (valid until the next call), or nil at the deadline or the
    /// stream's end.
    ///
    /// Found with memchr and compared in place: no allocation per event, so the client costs about what
    /// RawWebSocket's does per frame (it took 13 µs of CPU per event before, more than the bridge spent).
    private func nextEventData(until deadline: UInt64) -> Range<Int>? {
        while true {
            if let found = scanEvent() { return found }
            if now() > deadline { return nil }
            switch readMore() {
            case .closed: return nil
            case .timeout, .data: decodeChunks()
            }
        }
    }

    /// The data of the first whole event from `eventStart`, consumed; nil when none is whole yet.
    ///
    /// Comments and keepalives are skipped.
    private func scanEvent() -> Range<Int>? {
        while true {
            let (separator, data) = events.withUnsafeBytes { raw -> (Int?, Range<Int>?) in
                guard let base = raw.baseAddress else { return (nil, nil) }
                var lineStart = eventStart
                var data: Range<Int>?
                while lineStart < raw.count {
                    guard let hit = memchr(base + lineStart, 10, raw.count - lineStart) else { return (nil, nil) }
                    let lineEnd = base.distance(to: UnsafeRawPointer(hit))
                    if lineEnd == lineStart { return (lineEnd, data) }  // the empty line that ends the event
                    if lineEnd - lineStart >= 6, memcmp(base + lineStart, "data: ", 6) == 0 { data = (lineStart + 6)..<lineEnd }
                    lineStart = lineEnd + 1
                }
                return (nil, nil)
            }
            guard let separator else { return nil }
            eventStart = separator + 1
            if let data { return data }
        }
    }

    /// Drops the consumed bytes now and then (before reading more, never while a returned range is in use).
    private func compactEvents() {
        if eventStart >= 1 << 16 && eventStart * 2 >= events.count {
            events.removeFirst(eventStart)
            eventStart = 0
        }
    }

    /// Counts events whose data starts with `prefix` until `expected` were seen or the deadline passed.
    func count(eventsStartingWith prefix: [UInt8], expected: Int, until deadline: UInt64) -> Int {
        var seen = 0
        while seen < expected, let range = nextEventData(until: deadline) {
            if range.count >= prefix.count, events[range.lowerBound..<(range.lowerBound + prefix.count)].elementsEqual(prefix) { seen += 1 }
        }
        return seen
    }
}

/// An /acp client: a connection for POSTs and one for its connection-scoped stream.
struct SSEClient {
    let posts: RawHTTP
    let stream: RawHTTP
    let connectionID: String

    /// Initializes a connection and opens its stream.
    init(port: Int, until deadline: UInt64) throws {
        posts = try RawHTTP(port: port)
        let (status, fields, _) = try posts.post(initializeFrame, until: deadline)
        guard status == 200, let id = fields["acp-connection-id"] else { throw RawHTTP.Failure(description: "initialize answered \(status)") }
        connectionID = id
        stream = try RawHTTP(port: port)
        try stream.openStream(headers: ["Acp-Connection-Id": id], until: deadline)
    }

    /// POSTs a message of the connection; throws unless it is accepted (202).
    func send(_ body: String, session: String? = nil, until deadline: UInt64) throws {
        var headers = ["Acp-Connection-Id": connectionID]
        if let session { headers["Acp-Session-Id"] = session }
        let (status, _, text) = try posts.post(body, headers: headers, until: deadline)
        guard status == 202 else { throw RawHTTP.Failure(description: "POST answered \(status): \(text)") }
    }

    /// The next event on the stream whose data contains the answer to `id`.
    func answer(to id: Int, until deadline: UInt64) -> ArraySlice<UInt8>? {
        let marker = Array(#""id":\#(id),"#.utf8)
        let markerEnd = Array(#""id":\#(id)}"#.utf8)
        while let event = stream.nextEvent(until: deadline) {
            if event.firstRange(of: marker) != nil || event.firstRange(of: markerEnd) != nil { return event }
        }
        return nil
    }
}

/// SSE relay (`bench sserelay --port P --clients N --count C`): as `relay`, over Streamable HTTP.
///
/// Client 0 makes a session and prompts; the others attach with session/load; each counts session/update events on
/// its stream.
func runSSERelay(_ args: Args) throws {
    _ = raiseFileLimit(args.int("nofile", 65536))
    let port = args.int("port", 9099)
    let clients = max(args.int("clients", 1), 1)
    let expected = args.int("count", 10000)
    let timeout = min(args.double("timeout", 30), 120)
    let cwd = args.string("cwd", FileManager.default.currentDirectoryPath)
    let setupDeadline = now() + 30_000_000_000
    let all = try (0..<clients).map { _ in try SSEClient(port: port, until: setupDeadline) }
    try all[0].send(#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"\#(cwd)","mcpServers":[]}}"#, until: setupDeadline)
    guard let created = all[0].answer(to: 1, until: setupDeadline),
          let json = try JSONSerialization.jsonObject(with: Data(created)) as? [String: Any],
          let result = json["result"] as? [String: Any], let sessionID = result["sessionId"] as? String
    else { throw RawHTTP.Failure(description: "session/new failed") }
    for client in all.dropFirst() {
        try client.send(#"{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"\#(sessionID)","cwd":"\#(cwd)","mcpServers":[]}}"#, until: setupDeadline)
        guard client.answer(to: 1, until: setupDeadline) != nil else { throw RawHTTP.Failure(description: "no answer to session/load") }
    }
    let counts = Cell<[Int]>([])
    let finished = Cell<UInt64>(0)
    let done = DispatchGroup()
    let start = now()
    let end = start + UInt64(timeout * 1e9)
    for client in all {
        done.enter()
        let thread = Thread {
            let seen = client.stream.count(eventsStartingWith: updatePrefix, expected: expected, until: end)
            let t = now()
            counts.withLock { $0.append(seen) }
            finished.withLock { $0 = max($0, t) }
            done.leave()
        }
        thread.start()
    }
    try all[0].send(#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"\#(sessionID)","prompt":[{"type":"text","text":"flood"}]}}"#,
                    session: sessionID, until: end)
    done.wait()
    let seconds = Double(finished.withLock { $0 } - start) / 1e9
    let each = counts.withLock { $0 }
    let total = each.reduce(0, +)
    emit(["clients": clients, "updates": total, "per_client": total / clients, "min_per_client": each.min() ?? 0,
          "seconds": seconds, "updates_per_s": Double(total / clients) / max(seconds, 1e-9), "transport": "sse"])
}

/// Round trips over Streamable HTTP (`bench sseload --port P --clients N --seconds S`): each client POSTs `_oa/ping`
/// (202) and waits for its answer on its stream, one at a time; requests per second and latency percentiles.
func runSSELoad(_ args: Args) throws {
    _ = raiseFileLimit(args.int("nofile", 65536))
    let port = args.int("port", 9099)
    let clients = max(args.int("clients", 1), 1)
    let seconds = min(args.double("seconds", 3), 60)
    let setupDeadline = now() + 30_000_000_000
    let all = try (0..<clients).map { _ in try SSEClient(port: port, until: setupDeadline) }
    let latencies = Cell<[UInt32]>([])
    let errors = Cell(0)
    let done = DispatchGroup()
    let start = now()
    let end = start + UInt64(seconds * 1e9)
    for client in all {
        done.enter()
        let thread = Thread {
            var local: [UInt32] = []
            var id = 10
            while now() < end {
                let t0 = now()
                do {
                    try client.send(#"{"jsonrpc":"2.0","id":\#(id),"method":"_oa/ping","params":{}}"#, until: end + 5_000_000_000)
                } catch {
                    errors.withLock { $0 += 1 }
                    break
                }
                guard client.answer(to: id, until: end + 5_000_000_000) != nil else {
                    errors.withLock { $0 += 1 }
                    break
                }
                local.append(UInt32(min((now() - t0) / 1000, UInt64(UInt32.max))))
                id += 1
            }
            latencies.withLock { $0.append(contentsOf: local) }
            done.leave()
        }
        thread.start()
    }
    done.wait()
    let elapsed = Double(now() - start) / 1e9
    let sorted = latencies.withLock { $0 }.sorted()
    func pct(_ p: Double) -> Double { sorted.isEmpty ? 0 : Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) / 1000 }
    emit(["clients": clients, "opened": clients, "errors": errors.withLock { $0 }, "requests": sorted.count,
          "seconds": elapsed, "rps": Double(sorted.count) / max(elapsed, 1e-9), "p50_ms": pct(0.5), "p99_ms": pct(0.99),
          "transport": "sse"])
}
