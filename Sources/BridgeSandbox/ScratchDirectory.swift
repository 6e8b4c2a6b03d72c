import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A temporary directory a confined process writes in (its `TMPDIR`): a confined command may write only inside its
/// scope, and compilers, test runners and interpreters want a temporary directory.
///
/// Made on first use under the system's temporary directory (mode 0700), removed with everything in it by
/// ``remove()`` or when released.
public final class ScratchDirectory: Sendable {
    private let prefix: String
    private let state = Mutex<(path: String, descriptor: Int32)?>(nil)

    /// A directory named `<prefix>-XXXXXX`, not made yet.
    public init(prefix: String) {
        self.prefix = prefix
    }

    /// The directory's path and descriptor, made if needed; `nil` when it cannot be made (the confined process then
    /// has no writable temporary directory).
    public func directory() -> (path: String, descriptor: Int32)? {
        state.withLock { state in
            if let state { return state }
            let template = (NSTemporaryDirectory() as NSString).appendingPathComponent("\(prefix)-XXXXXX")
            var bytes = Array(template.utf8CString)
            guard mkdtemp(&bytes) != nil else { return nil }
            let path = String(decoding: bytes.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard descriptor >= 0 else {
                rmdir(path)
                return nil
            }
            state = (path, descriptor)
            return state
        }
    }

    /// Removes the directory and what was left in it.
    public func remove() {
        guard let made = state.withLock({ state -> (path: String, descriptor: Int32)? in
            defer { state = nil }
            return state
        }) else { return }
        close(made.descriptor)
        try? FileManager.default.removeItem(atPath: made.path)
    }

    deinit {
        remove()
    }
}
