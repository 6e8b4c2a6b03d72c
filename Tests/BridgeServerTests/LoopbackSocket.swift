import BridgeTestKit
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A blocking TCP socket to 127.0.0.1, with a receive timeout: the one place the raw-socket
/// test helpers (HTTP, WebSocket upgrade, keepalive) open their connections.
enum LoopbackSocket {
    struct Failure: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    /// Connects to `127.0.0.1:port`; the caller closes the descriptor.
    ///
    /// A read waits at most `receiveTimeout` seconds: a bound for a bridge that never answers, not a speed limit (no
    /// helper reads to it: each stops at the server's close, a whole `Content-Length` body or a frame). 5 s ran out in
    /// the whole parallel run on 2 cores, whose first tests stall for 7–15 s.
    static func connect(port: Int, receiveTimeout: Int = TestBounds.notUnderTestSeconds) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(message: "socket failed") }
        var timeout = timeval(tv_sec: receiveTimeout, tv_usec: 0)
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
            throw Failure(message: "connect to 127.0.0.1:\(port) failed")
        }
        return fd
    }
}
