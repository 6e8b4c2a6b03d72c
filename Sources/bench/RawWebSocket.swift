// A minimal WebSocket client on a blocking loopback socket, for the relay figure: reading and counting frames
// costs it next to nothing, so the figure is the bridge's, not the load generator's (the relay clients share the
// machine's 2 cores with the bridge and the agent).

import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One WebSocket connection to 127.0.0.1 on a blocking socket (reads time out after 1 s).
///
/// One thread reads it at a time; sending from another thread only touches the socket, not the read buffer.
final class RawWebSocket: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible { var description: String }

    private let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: 1 << 20)
    /// Unconsumed bytes are buffer[start..<end].
    private var start = 0
    private var end = 0

    /// Connects to `ws://127.0.0.1:port/path` and upgrades; throws unless the server answers 101.
    init(url: String) throws {
        guard let parsed = URL(string: url), let port = parsed.port, parsed.host == "127.0.0.1" else {
            throw Failure(description: "relay needs a ws://127.0.0.1:PORT/ URL, got \(url)")
        }
        let path = parsed.path.isEmpty ? "/" : parsed.path
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
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
        let request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        try write(Array(request.utf8))
        let headerEnd = Array("\r\n\r\n".utf8)
        var found: Int?
        for _ in 0..<100 {
            if let range = buffer[start..<end].firstRange(of: headerEnd) {
                found = range.upperBound
                break
            }
            if readMore() == .closed { break }
        }
        guard let found else { throw Failure(description: "no answer to the upgrade") }
        let head = String(decoding: buffer[start..<found], as: UTF8.self)
        guard head.hasPrefix("HTTP/1.1 101") else { throw Failure(description: "no upgrade: \(head)") }
        start = found
    }

    deinit { close(fd) }

    /// CLOCK_REALTIME in nanoseconds: the clock the flood agent stamps its send times with (`time.time_ns()`).
    private func realtimeNanoseconds() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }

    private func write(_ bytes: [UInt8]) throws {
        let sent = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == bytes.count else { throw Failure(description: "send failed (errno \(errno))") }
    }

    enum ReadResult { case data, timeout, closed }

    /// Reads more bytes into the buffer.
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

    /// Sends a masked text frame.
    func sendText(_ text: String) throws {
        let payload = Array(text.utf8)
        var frame: [UInt8] = [0x81]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else {
            frame.append(0x80 | 126)
            frame.append(UInt8(payload.count >> 8))
            frame.append(UInt8(payload.count & 0xFF))
        }
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        frame.append(contentsOf: mask)
        frame.append(contentsOf: payload.enumerated().map { $0.element ^ mask[$0.offset % 4] })
        try write(frame)
    }

    /// The next complete frame (opcode, payload range in `buffer`), if one is buffered.
    private func bufferedFrame() -> (opcode: UInt8, payload: Range<Int>)? {
        let available = end - start
        guard available >= 2 else { return nil }
        var length = Int(buffer[start + 1] & 0x7F)
        var header = 2
        if length == 126 {
            guard available >= 4 else { return nil }
            length = Int(buffer[start + 2]) << 8 | Int(buffer[start + 3])
            header = 4
        } else if length == 127 {
            guard available >= 10 else { return nil }
            length = (2..<10).reduce(0) { $0 << 8 | Int(buffer[start + $1]) }
            header = 10
        }
        guard available >= header + length else { return nil }
        let payload = (start + header)..<(start + header + length)
        let opcode = buffer[start] & 0x0F
        start = payload.upperBound
        return (opcode, payload)
    }

    /// The next text frame's payload as text, waiting at most until `deadline` (uptime nanoseconds).
    func nextText(until deadline: UInt64) -> String? {
        while now() < deadline {
            if let frame = bufferedFrame() {
                if frame.opcode == 0x8 { return nil }
                if frame.opcode == 0x1 { return String(decoding: buffer[frame.payload], as: UTF8.self) }
                continue
            }
            if readMore() == .closed { return nil }
        }
        return nil
    }

    /// Counts text frames starting with `prefix` until `expected` were seen, the connection closes, or `deadline`.
    func count(framesStartingWith prefix: [UInt8], expected: Int, until deadline: UInt64) -> Int {
        var seen = 0
        while seen < expected, now() < deadline {
            while seen < expected, let frame = bufferedFrame() {
                if frame.opcode == 0x8 { return seen }
                if frame.opcode == 0x1, buffer[frame.payload].starts(with: prefix) { seen += 1 }
            }
            if seen < expected, readMore() == .closed { return seen }
        }
        return seen
    }

    /// For each text frame starting with `prefix` until `expected` were seen (or the connection closes, or
    /// `deadline`): how long after the send time stamped in it (` t=<CLOCK_REALTIME ns>`) it was read, in µs.
    func latencies(framesStartingWith prefix: [UInt8], expected: Int, until deadline: UInt64) -> [UInt32] {
        let marker = Array(" t=".utf8)
        var result: [UInt32] = []
        result.reserveCapacity(expected)
        while result.count < expected, now() < deadline {
            while result.count < expected, let frame = bufferedFrame() {
                if frame.opcode == 0x8 { return result }
                guard frame.opcode == 0x1, buffer[frame.payload].starts(with: prefix) else { continue }
                let received = realtimeNanoseconds()
                guard let at = buffer[frame.payload].firstRange(of: marker) else { continue }
                var stamp: UInt64 = 0
                var index = at.upperBound
                while index < frame.payload.upperBound, buffer[index] >= 0x30, buffer[index] <= 0x39 {
                    stamp = stamp * 10 + UInt64(buffer[index] - 0x30)
                    index += 1
                }
                result.append(UInt32(min(received > stamp ? (received - stamp) / 1000 : 0, UInt64(UInt32.max))))
            }
            if result.count < expected, readMore() == .closed { return result }
        }
        return result
    }

    /// Sends a close frame (masked, no payload).
    func sendClose() {
        try? write([0x88, 0x80, 0x12, 0x34, 0x56, 0x78])
    }
}
