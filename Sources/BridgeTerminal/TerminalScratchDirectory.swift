import BridgeSandbox
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The temporary directory confined terminals write in (their `TMPDIR`): a confined command may write only inside
/// its session's directories, and compilers and test runners want a temporary directory. Made on first use under
/// the system's temporary directory (mode 0700), removed with everything in it by ``remove()``.
final class TerminalScratchDirectory: Sendable {
    private let state = Mutex<(path: String, descriptor: Int32)?>(nil)

    /// The directory's path and descriptor, made if needed; `nil` when it cannot be made (terminals then have no
    /// writable temporary directory).
    func directory() -> (path: String, descriptor: Int32)? {
        state.withLock { state in
            if let state { return state }
            let template = (NSTemporaryDirectory() as NSString).appendingPathComponent("oa-bridge-terminals-XXXXXX")
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

    /// Removes the directory and what the terminals left in it.
    func remove() {
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
