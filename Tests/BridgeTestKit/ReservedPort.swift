#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A loopback TCP port that is closed for as long as this value lives: a socket bound to it that never listens, so a
/// connect to it is refused (RST) and nothing else can bind it meanwhile (it has no `SO_REUSEADDR`).
///
/// Binding a port, closing it and handing out the number would let another test take it first (issue 31 item 3).
public final class ReservedPort: Sendable {
    /// The port number.
    public let port: Int
    private let descriptor: Int32

    /// Binds a fresh port on 127.0.0.1 (never listened on).
    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(errno: errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else {
            let code = errno
            close(fd)
            throw Failure(errno: code)
        }
        descriptor = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit {
        close(descriptor)
    }

    /// The socket could not be made or bound.
    public struct Failure: Error {
        /// The `errno` of `socket(2)` or `bind(2)`.
        public let errno: Int32
    }
}
