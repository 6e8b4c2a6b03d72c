#if canImport(Glibc)
import Glibc
#endif

/// A gate a blocking job waits at on a thread of its own (a file call on a thread pool, a callback of a C library)
/// until the test opens it: the job goes on when the test says so, not after a sleep.
///
/// It is a pipe: ``open()`` writes its one byte, ``wait(timeout:)`` polls for it (every waiter sees it; it is never
/// read).
public final class ThreadGate: Sendable {
    private let readEnd: Int32
    private let writeEnd: Int32

    /// A closed gate.
    public init() {
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        }
        readEnd = ends[0]
        writeEnd = ends[1]
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }

    /// Opens the gate: every waiter, and every later one, goes on.
    public func open() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    /// Blocks the calling thread until the gate is open, for at most `timeout`; true if it is open.
    ///
    /// Never call it on a task of the concurrency pool.
    public func wait(timeout: Duration = .seconds(60)) -> Bool {
        let milliseconds = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        var watch = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
        var ready: Int32
        repeat { ready = poll(&watch, 1, milliseconds) } while ready < 0 && errno == EINTR
        return ready > 0
    }
}
