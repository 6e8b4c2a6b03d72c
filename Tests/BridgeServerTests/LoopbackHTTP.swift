import BridgeTestKit
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The tests' one HTTP/1.1 client for the bridge on 127.0.0.1: any method, headers and body, the `Host` header as
/// given (for the DNS-rebinding checks), and requests other clients will not send as asked (a WebSocket upgrade
/// whose refusal is under test).
///
/// It reads the whole reply (to the server's close, or a whole `Content-Length` body). Tests that need malformed
/// bytes on the wire write them themselves (``RawWebSocket``, the system tests).
enum LoopbackHTTP {
    struct Failure: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    /// A reply: status, headers (names lowercased), body (de-chunked).
    struct Reply: Sendable {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// The headers of a WebSocket upgrade request.
    static let upgradeHeaders = [
        "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version": "13",
    ]

    /// Sends one request and reads the reply off the cooperative pool (the server under test needs its threads).
    ///
    /// `receiveTimeout` (seconds) bounds each read: a bound for a server that never answers (see ``LoopbackSocket``).
    static func request(
        port: Int, _ method: String, _ path: String, json: String? = nil, body: String? = nil, contentType: String? = nil,
        headers: [String: String] = [:], host: String? = nil, receiveTimeout: Int = TestBounds.notUnderTestSeconds
    ) async throws -> Reply {
        try await onOwnThread {
            try blockingRequest(port: port, method, path, json: json, body: body, contentType: contentType, headers: headers,
                                host: host ?? "127.0.0.1", receiveTimeout: receiveTimeout)
        }
    }

    /// The blocking form of ``request(port:_:_:json:body:contentType:headers:host:receiveTimeout:)``.
    static func blockingRequest(
        port: Int, _ method: String, _ path: String, json: String? = nil, body: String? = nil, contentType: String? = nil,
        headers: [String: String] = [:], host: String, receiveTimeout: Int = TestBounds.notUnderTestSeconds
    ) throws -> Reply {
        let fd = try LoopbackSocket.connect(port: port, receiveTimeout: receiveTimeout)
        defer { close(fd) }
        let payload = Array((json ?? body ?? "").utf8)
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\n"
        if headers["Connection"] == nil { head += "Connection: close\r\n" }
        if let type = json != nil ? "application/json" : contentType { head += "Content-Type: \(type)\r\n" }
        if method != "GET" { head += "Content-Length: \(payload.count)\r\n" }
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { head += "\(name): \(value)\r\n" }
        let bytes = Array((head + "\r\n").utf8) + payload
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBufferPointer { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { throw Failure(message: "send failed") }
            sent += count
        }
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        // Why the reading stopped, said when no whole reply came.
        var ended = "the bridge closed the connection"
        // To the server's close, or a complete Content-Length body (an upgrade refusal may keep the socket open).
        for _ in 0..<10_000 {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count < 0 && errno == EINTR { continue }
            if count < 0 {
                ended = errno == EAGAIN ? "no answer within \(receiveTimeout) s" : "recv failed (errno \(errno))"
            }
            if count <= 0 { break }
            data.append(contentsOf: buffer[0..<count])
            if let reply = try? parse(data), let length = reply.headers["content-length"].flatMap(Int.init), reply.body.count >= length {
                break
            }
        }
        guard let reply = try? parse(data) else {
            throw Failure(message: "no HTTP response to \(method) \(path): \(ended) after \(data.count) bytes: \(String(decoding: data, as: UTF8.self))")
        }
        return reply
    }

    private static func parse(_ data: [UInt8]) throws -> Reply {
        let separator: [UInt8] = [13, 10, 13, 10]
        var end = 0
        while end + 4 <= data.count, Array(data[end..<(end + 4)]) != separator { end += 1 }
        guard end + 4 <= data.count else { throw Failure(message: "no whole HTTP head") }
        let lines = String(decoding: data[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = (lines.first ?? "").split(separator: " ").map(String.init)
        let status = statusParts.count > 1 ? Int(statusParts[1]) ?? 0 : 0
        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var content = Array(data[(end + 4)...])
        if fields["transfer-encoding"]?.lowercased() == "chunked" { content = dechunk(content) }
        return Reply(status: status, headers: fields, body: content)
    }

    private static func dechunk(_ bytes: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        var index = 0
        while index < bytes.count {
            var lineEnd = index
            while lineEnd + 1 < bytes.count, !(bytes[lineEnd] == 13 && bytes[lineEnd + 1] == 10) { lineEnd += 1 }
            guard lineEnd + 1 < bytes.count else { break }
            let sizeField = String(decoding: bytes[index..<lineEnd], as: UTF8.self).split(separator: ";").first.map(String.init) ?? ""
            guard let size = Int(sizeField, radix: 16), size > 0 else { break }
            let start = lineEnd + 2
            let stop = min(bytes.count, start + size)
            output.append(contentsOf: bytes[start..<stop])
            index = stop + 2
        }
        return output
    }
}
