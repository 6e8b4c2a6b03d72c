import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A minimal blocking HTTP/1.1 GET over a loopback TCP socket, so tests need no HTTP client library.
enum RawHTTP {
    struct Failure: Error { var message: String }

    static func get(port: Int, path: String) async throws -> (status: Int, body: String) {
        try await offPool { try getBlocking(port: port, path: path) }
    }

    private static func getBlocking(port: Int, path: String) throws -> (status: Int, body: String) {
        let fd = try LoopbackSocket.connect(port: port)
        defer { close(fd) }
        let request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        _ = request.withCString { send(fd, $0, strlen($0), 0) }
        var data = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { break }
            data.append(contentsOf: buffer[0..<count])
        }
        let text = String(decoding: data, as: UTF8.self)
        guard let headerEnd = text.range(of: "\r\n\r\n") else { throw Failure(message: "no HTTP response: \(text)") }
        let statusLine = text[..<headerEnd.lowerBound].split(separator: "\r\n").first ?? ""
        let parts = statusLine.split(separator: " ")
        let status = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
        return (status, String(text[headerEnd.upperBound...]))
    }
}

/// Runs blocking socket code on a dispatch thread, so it never blocks the (small) cooperative thread pool
/// that the server under test needs.
func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async {
            continuation.resume(with: Result { try body() })
        }
    }
}
