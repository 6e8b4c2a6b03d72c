public import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where oa-bridge keeps its state (the pairing database), following the XDG Base Directory specification.
public enum StateDirectory {
    /// The name of the application's folder inside the state home.
    public static let applicationFolder = "oa-bridge"

    /// The state directory: `override` when given (`--state-dir`), else `$XDG_STATE_HOME/oa-bridge` when
    /// `XDG_STATE_HOME` is an absolute path, else `~/.local/state/oa-bridge`.
    public static func resolve(
        override: String? = nil,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> URL {
        if let override, !override.isEmpty {
            return URL(fileURLWithPath: (override as NSString).expandingTildeInPath, isDirectory: true)
        }
        if let xdg = environment["XDG_STATE_HOME"], xdg.hasPrefix("/") {
            return URL(fileURLWithPath: xdg, isDirectory: true).appendingPathComponent(applicationFolder, isDirectory: true)
        }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return URL(fileURLWithPath: home, isDirectory: true)
            .appendingPathComponent(".local/state", isDirectory: true)
            .appendingPathComponent(applicationFolder, isDirectory: true)
    }

    /// Creates `directory` (and missing parents) and makes it private to this user (mode 0700), even if it existed.
    public static func prepare(_ directory: URL) throws(PairingError) {
        let path = directory.path
        let parent = directory.deletingLastPathComponent().path
        do {
            try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        } catch {
            throw .storage(PairingStorageFailure(.createDirectory, path: parent, cause: .other(error.localizedDescription)))
        }
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw .storage(PairingStorageFailure(.createDirectory, path: path, cause: .system(errno: errno)))
        }
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw .storage(PairingStorageFailure(.createDirectory, path: path, cause: .notADirectory))
        }
        guard chmod(path, 0o700) == 0 else {
            throw .storage(PairingStorageFailure(.restrict, path: path, cause: .system(errno: errno)))
        }
    }

    /// Creates `file` if missing and sets its mode to 0600 (owner read/write only).
    public static func preparePrivateFile(_ file: URL) throws(PairingError) {
        let path = file.path
        let descriptor = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw .storage(PairingStorageFailure(.createFile, path: path, cause: .system(errno: errno)))
        }
        close(descriptor)
        try restrictIfPresent(file)
    }

    /// Sets the mode of `file` to 0600 when it exists; does nothing when it does not.
    static func restrictIfPresent(_ file: URL) throws(PairingError) {
        if chmod(file.path, 0o600) != 0 && errno != ENOENT {
            throw .storage(PairingStorageFailure(.restrict, path: file.path, cause: .system(errno: errno)))
        }
    }

    /// The permission bits (`st_mode & 0o777`) of the file at `path`, or `nil` when it cannot be read.
    public static func permissions(ofPath path: String) -> Int? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int(info.st_mode & 0o777)
    }
}
