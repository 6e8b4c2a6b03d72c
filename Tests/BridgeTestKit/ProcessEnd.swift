import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Waits for a process to end, whoever its parent is (a terminal's background child, a command's grandchild): the
/// kernel tells it through a pidfd (Linux 5.3+), so a test waits for the end itself instead of looking at `/proc`
/// again and again.
///
/// A zombie counts as ended.
public enum ProcessEnd {
    /// Waits until process `pid` has ended (at once if it is gone already), for at most `timeout` of real time; true
    /// if it has ended.
    ///
    /// The bound only fails the test: a process that does not end would hang the whole run.
    public static func wait(for pid: Int32, timeout: Duration = TestBounds.notUnderTest) async -> Bool {
        guard let pidfdOpen else { return false }
        let descriptor = pidfdOpen(pid, 0)
        if descriptor < 0 { return errno == ESRCH }
        let milliseconds = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        // poll(2) blocks: on a thread of its own, not on one of the concurrency pool's few.
        return await withCheckedContinuation { continuation in
            let thread = Thread {
                var watch = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                var ready: Int32
                repeat { ready = poll(&watch, 1, milliseconds) } while ready < 0 && errno == EINTR
                close(descriptor)
                continuation.resume(returning: ready > 0)
            }
            thread.stackSize = 64 << 10
            thread.start()
        }
    }

    /// glibc's `pidfd_open(2)` wrapper (2.36), looked up at run time: its header is not in Swift's Glibc module.
    private static let pidfdOpen: (@convention(c) (pid_t, UInt32) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pidfd_open") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (pid_t, UInt32) -> Int32).self)
    }()
}
