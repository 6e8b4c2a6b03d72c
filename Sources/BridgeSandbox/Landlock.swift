import CSandbox

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the kernel offers of Landlock, the Linux security module an unprivileged process confines itself with.
public enum Landlock {
    /// The highest Landlock ABI version the kernel offers (1 on Linux 5.13, 7 on 6.15), or the error that says why
    /// there is none.
    public static func abi() -> Result<Int, SandboxError> {
        let version = csb_landlock_abi()
        return version > 0 ? .success(Int(version)) : .failure(.landlockUnavailable(errno: errno))
    }

    /// The oldest ABI the bridge confines with: 3 (Linux 6.2), the first that handles truncation.
    ///
    /// Under ABI 1 and 2 a confined process could still `truncate(2)` any file it can name, the bridge's own
    /// included.
    public static let minimumABI = 3

    /// ``abi()`` when it is at least ``minimumABI``; otherwise ``SandboxError/landlockUnavailable(errno:)`` or
    /// ``SandboxError/landlockTooOld(abi:minimum:)``.
    ///
    /// `probe` replaces the kernel's answer (tests).
    public static func usableABI(probe: () -> Result<Int, SandboxError> = abi) -> Result<Int, SandboxError> {
        switch probe() {
        case .success(let version) where version < minimumABI: return .failure(.landlockTooOld(abi: version, minimum: minimumABI))
        case let other: return other
        }
    }

    /// Filesystem access rights (`LANDLOCK_ACCESS_FS_*`).
    public struct Access: OptionSet, Sendable, Hashable {
        /// The `LANDLOCK_ACCESS_FS_*` bits.
        public let rawValue: UInt64
        /// Rights from their `LANDLOCK_ACCESS_FS_*` bits.
        public init(rawValue: UInt64) { self.rawValue = rawValue }

        /// Execute a file (`LANDLOCK_ACCESS_FS_EXECUTE`).
        public static let execute = Access(rawValue: 1 << 0)
        /// Open a file for writing (`LANDLOCK_ACCESS_FS_WRITE_FILE`).
        public static let writeFile = Access(rawValue: 1 << 1)
        /// Open a file for reading (`LANDLOCK_ACCESS_FS_READ_FILE`).
        public static let readFile = Access(rawValue: 1 << 2)
        /// Open a directory or list its entries (`LANDLOCK_ACCESS_FS_READ_DIR`).
        public static let readDir = Access(rawValue: 1 << 3)
        /// Remove or rename an empty directory (`LANDLOCK_ACCESS_FS_REMOVE_DIR`).
        public static let removeDir = Access(rawValue: 1 << 4)
        /// Unlink or rename a file (`LANDLOCK_ACCESS_FS_REMOVE_FILE`).
        public static let removeFile = Access(rawValue: 1 << 5)
        /// Create a character device (`LANDLOCK_ACCESS_FS_MAKE_CHAR`).
        public static let makeChar = Access(rawValue: 1 << 6)
        /// Create a directory (`LANDLOCK_ACCESS_FS_MAKE_DIR`).
        public static let makeDir = Access(rawValue: 1 << 7)
        /// Create a regular file (`LANDLOCK_ACCESS_FS_MAKE_REG`).
        public static let makeReg = Access(rawValue: 1 << 8)
        /// Create a UNIX domain socket (`LANDLOCK_ACCESS_FS_MAKE_SOCK`).
        public static let makeSock = Access(rawValue: 1 << 9)
        /// Create a named pipe (`LANDLOCK_ACCESS_FS_MAKE_FIFO`).
        public static let makeFifo = Access(rawValue: 1 << 10)
        /// Create a block device (`LANDLOCK_ACCESS_FS_MAKE_BLOCK`).
        public static let makeBlock = Access(rawValue: 1 << 11)
        /// Create a symbolic link (`LANDLOCK_ACCESS_FS_MAKE_SYM`).
        public static let makeSym = Access(rawValue: 1 << 12)
        /// ABI 2: link or rename across directories.
        public static let refer = Access(rawValue: 1 << 13)
        /// ABI 3.
        public static let truncate = Access(rawValue: 1 << 14)
        /// ABI 5.
        public static let ioctlDev = Access(rawValue: 1 << 15)

        /// Read and run files, list directories.
        public static let read: Access = [.execute, .readFile, .readDir]
        /// Everything (read, write, create, remove, rename).
        public static let readWrite = Access(rawValue: (1 << 16) - 1)
        /// Read and write an existing device or file (`/dev/null`), never create or remove.
        public static let device: Access = [.readFile, .writeFile, .truncate, .ioctlDev]
        /// The rights a rule on a file (not a directory) may hold.
        public static let fileRights: Access = [.execute, .writeFile, .readFile, .truncate, .ioctlDev]

        /// Every right the ABI `version` knows.
        public static func handled(abi version: Int) -> Access {
            switch version {
            case ..<1: return []
            case 1: return Access(rawValue: (1 << 13) - 1)
            case 2: return Access(rawValue: (1 << 14) - 1)
            case 3, 4: return Access(rawValue: (1 << 15) - 1)
            default: return readWrite
            }
        }
    }
}
