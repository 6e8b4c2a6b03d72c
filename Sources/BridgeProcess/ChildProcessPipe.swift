#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A pipe whose both ends are closed in child processes' exec (a child gets its end by ``ChildProcess``'s dup, which
/// clears the flag).
public struct ChildProcessPipe: Sendable {
    /// The read end.
    public let read: Int32
    /// The write end.
    public let write: Int32

    /// A new pipe for `executable` (named in the error), or the system's reason it has none.
    public init(for executable: String) throws(ChildProcessError) {
        var ends: [Int32] = [-1, -1]
        // pipe2 sets the flag in the same call: with pipe and then fcntl, a process spawned by another thread in
        // between inherits the ends, and an agent's stdin with a reader left in that process never fails a write when
        // the agent dies (seen in parallel test runs).
        #if canImport(Glibc)
        if let pipe2 = Self.pipe2Function() {
            guard pipe2(&ends, O_CLOEXEC) == 0 else { throw ChildProcessError(executable: executable, stage: .pipe, errno: errno) }
            (read, write) = (ends[0], ends[1])
            return
        }
        #endif
        guard pipe(&ends) == 0 else { throw ChildProcessError(executable: executable, stage: .pipe, errno: errno) }
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        (read, write) = (ends[0], ends[1])
    }

    #if canImport(Glibc)
    /// pipe2(2), looked up at run time: Glibc's Swift module does not export it (it needs _GNU_SOURCE).
    private static func pipe2Function() -> (@convention(c) (UnsafeMutablePointer<CInt>, CInt) -> CInt)? {
        guard let symbol = dlsym(nil, "pipe2") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<CInt>, CInt) -> CInt).self)
    }
    #endif
}
