import CSandbox

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a file is, whatever its path is spelled: its device and inode number.
///
/// A symbolic link, `..`, another hard link or a bind mount of the same directory all lead to the same identity.
public struct FileIdentity: Hashable, Sendable, CustomStringConvertible {
    /// `st_dev`.
    public let device: UInt64
    /// `st_ino`.
    public let inode: UInt64
    /// Whether it is a directory.
    public let isDirectory: Bool

    /// The identity of the file open at `descriptor`, or `nil` when `fstat(2)` fails.
    public init?(descriptor: Int32) {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        self.init(info)
    }

    /// The identity of `name` in the directory `directory` (not following a symbolic link in its place), or `nil`.
    public init?(name: String, in directory: Int32) {
        var info = stat()
        guard fstatat(directory, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        self.init(info)
    }

    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        isDirectory = info.st_mode & S_IFMT == S_IFDIR
    }

    /// Equality ignores ``isDirectory`` (a device and inode name one file).
    public static func == (lhs: FileIdentity, rhs: FileIdentity) -> Bool {
        lhs.device == rhs.device && lhs.inode == rhs.inode
    }

    /// Hashes the device and inode, what identifies a file.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(device)
        hasher.combine(inode)
    }

    /// `device:inode`.
    public var description: String { "\(device):\(inode)" }
}

/// `O_PATH`: a handle on a file or directory that opens nothing for reading (Linux).
let oPath = Int32(CSB_O_PATH)
