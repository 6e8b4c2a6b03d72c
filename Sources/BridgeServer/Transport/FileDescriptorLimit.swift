#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The process's limit on open file descriptors (`RLIMIT_NOFILE`), which bounds the connections it can hold: every
/// accepted connection is one descriptor.
///
/// Many systems start a process with a soft limit of 1,024, below the bridge's default connection cap
/// (``BridgeServerConfiguration/maxConnections`` plus ``BridgeServerConfiguration/maxHTTPConnections``, 1,280), so
/// the bridge raises its soft limit to the hard one at start, as servers do (Go's runtime does the same); past the
/// limit `accept` fails and nobody gets an answer.
enum FileDescriptorLimit {
    /// Raises the soft limit to the hard limit when it is lower; returns the soft limit in force afterwards (`nil`
    /// when it cannot be read).
    @discardableResult
    static func raiseToHardLimit() -> Int? {
        var limit = rlimit()
        #if canImport(Glibc)
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        #else
        let resource = RLIMIT_NOFILE
        #endif
        guard getrlimit(resource, &limit) == 0 else { return nil }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(resource, &raised) == 0 { limit = raised }
        }
        return Int(clamping: limit.rlim_cur)  // RLIM_INFINITY (all ones) clamps to Int.max
    }
}
