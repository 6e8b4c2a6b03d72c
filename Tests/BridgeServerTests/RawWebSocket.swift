import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A hand-made WebSocket client on a plain socket, for what a polite client library hides:
/// it answers pings only when told to (``sendPong(_:)``), so it plays a dead peer.
final class RawWebSocket {
    struct Failure: Error { var message: String }

    private let fd: Int32
    private var buffer: [UInt8] = []

    /// Connects and upgrades; throws unless the server answers 101.
    init(port: Int, path: String = "/") throws {
        fd = try LoopbackSocket.connect(port: port)
        let request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        try write(Array(request.utf8))
        while !(buffer.count >= 4 && String(decoding: buffer, as: UTF8.self).contains("\r\n\r\n")) {
            guard try readMore() else { throw Failure(message: "closed during the upgrade") }
        }
        let text = String(decoding: buffer, as: UTF8.self)
        guard text.hasPrefix("HTTP/1.1 101"), let end = text.range(of: "\r\n\r\n") else { throw Failure(message: "no upgrade: \(text)") }
        buffer = Array(buffer[text.utf8.distance(from: text.startIndex, to: end.upperBound)...])
    }

    deinit { close(fd) }

    private func write(_ bytes: [UInt8]) throws {
        let sent = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == bytes.count else { throw Failure(message: "send failed") }
    }

    /// Reads more bytes; false at end of stream.
    ///
    /// Throws on timeout.
    private func readMore() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 4096)
        let count = recv(fd, &chunk, chunk.count, 0)
        if count == 0 { return false }
        if count < 0 { throw Failure(message: "recv failed or timed out (errno \(errno))") }
        buffer.append(contentsOf: chunk[0..<count])
        return true
    }

    /// Sends a masked text frame.
    func sendText(_ text: String) throws {
        try sendFrame(opcode: 0x1, payload: Array(text.utf8))
    }

    /// Sends a masked pong frame with `payload` (the answer to a ping carrying it).
    func sendPong(_ payload: [UInt8]) throws {
        try sendFrame(opcode: 0xA, payload: payload)
    }

    /// Sends one masked, final frame.
    private func sendFrame(opcode: UInt8, payload: [UInt8]) throws {
        var frame: [UInt8] = [0x80 | opcode]
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

    /// The next frame's opcode and payload, or nil at end of stream.
    func nextFrame() throws -> (opcode: UInt8, payload: [UInt8])? {
        while true {
            if buffer.count >= 2 {
                var length = Int(buffer[1] & 0x7F)
                var offset = 2
                if length == 126, buffer.count >= 4 {
                    length = Int(buffer[2]) << 8 | Int(buffer[3])
                    offset = 4
                } else if length == 127 {
                    throw Failure(message: "frame too large for this test client")
                }
                if length != 126, buffer.count >= offset + length {
                    let frame = (buffer[0] & 0x0F, Array(buffer[offset..<(offset + length)]))
                    buffer.removeFirst(offset + length)
                    return frame
                }
            }
            guard try readMore() else { return nil }
        }
    }
}
