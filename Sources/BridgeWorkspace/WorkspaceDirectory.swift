#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An open directory descriptor that every file request of a session is resolved beneath, so that renaming or
/// replacing the directory's path afterwards changes nothing.
///
/// Closed when the last reference goes.
final class WorkspaceDirectory: Sendable {
    /// The descriptor (opened with `O_DIRECTORY`, close-on-exec).
    let descriptor: Int32

    /// Takes ownership of `descriptor`.
    init(adopting descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }
}
