#if canImport(CAvahi)
import CAvahi
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Makes every allocation of Avahi's libraries start out zero-filled.
///
/// Avahi 0.8's dns_sd compatibility library (Debian 12's libavahi-compat-libdnssd1) allocates each
/// `DNSServiceRef` without zeroing it and then sets only the one reply callback its call needs. When
/// avahi-daemon goes away, the library's client-failure handler calls the first of those callback
/// pointers that is not NULL: for a `DNSServiceResolve` or `DNSServiceQueryRecord` ref that is
/// uninitialised memory, and the process jumps into garbage (seen as a SIGSEGV of `discover --backend
/// dnssd` when the daemon was killed). Avahi fixed it after 0.8 by allocating zeroed memory (avahi pull
/// request 569). Giving libavahi-common, which every Avahi library allocates through, an allocator that
/// zeroes does the same for the library installed here.
///
/// The allocator is process-wide and is libc's underneath, so memory allocated before it was installed
/// is still freed correctly; zeroing costs a `calloc` instead of a `malloc` on Avahi's (rare) allocations.
enum AvahiZeroedAllocator {
    private static let installed: Bool = {
        // Avahi keeps the pointer, not a copy: the table lives as long as the process.
        let table = UnsafeMutablePointer<AvahiAllocator>.allocate(capacity: 1)
        table.initialize(to: AvahiAllocator(
            malloc: { size in calloc(1, size) },
            free: { pointer in free(pointer) },
            realloc: { pointer, size in realloc(pointer, size) },
            calloc: { count, size in calloc(count, size) }))
        avahi_set_allocator(table)
        return true
    }()

    /// Installs the allocator, once per process, before the first call into an Avahi library.
    static func install() {
        _ = installed
    }
}
#endif
