public import BridgeDPoP
import Crypto
public import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// This client's DPoP key for one bridge (RFC 9449, issue 30): a P-256 private key in a PEM file only its owner can
/// read (mode 0600, in a directory of mode 0700), `<client state>/dpop/<bridge id or pin prefix>.key`.
///
/// It is made at pairing and never leaves the machine: the bridge binds the token family to its thumbprint, so tokens
/// copied out of the credentials file are of no use without it.
public enum DPoPClientKey {
    /// The key file's directory for credentials kept in `credentialsDirectory` (`<client state>/dpop`).
    public static func directory(beside credentialsDirectory: URL) -> URL {
        credentialsDirectory.appendingPathComponent("dpop", isDirectory: true)
    }

    /// The key file's name for a bridge: its pin's first 8 bytes in hex (`pin-0123456789abcdef.key`) when it has a
    /// pin, else `fallback` (the credentials file's name without extension) made safe for a file name.
    public static func fileName(pinDigest: [UInt8]?, fallback: String) -> String {
        if let pinDigest, pinDigest.count >= 8 {
            return "pin-" + pinDigest.prefix(8).map { String(format: "%02x", $0) }.joined() + ".key"
        }
        let safe = String(fallback.map { $0.isLetter || $0.isNumber || "._-".contains($0) ? $0 : "_" })
        return (safe.isEmpty ? "bridge" : safe) + ".key"
    }

    /// Makes a new key and writes it to `file` (replacing one that was there), with the directory made 0700 and the
    /// file 0600 before the key is written.
    /// - Throws: ``DPoPClientKeyError/unwritable(path:reason:)``.
    public static func create(at file: URL) throws(DPoPClientKeyError) -> DPoPSigner {
        let key = P256.Signing.PrivateKey()
        let directory = file.deletingLastPathComponent()
        let temporary = directory.appendingPathComponent(".\(file.lastPathComponent).\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory.path)
            guard FileManager.default.createFile(atPath: temporary.path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                throw CocoaError(.fileWriteNoPermission)
            }
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: temporary.path)
            let handle = try FileHandle(forWritingTo: temporary)
            defer { try? handle.close() }
            try handle.write(contentsOf: Data(key.pemRepresentation.utf8))
            try handle.synchronize()
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw .unwritable(path: file.path, reason: "\(error)")
        }
        // rename(2): a reader sees the old key or the new one, never half of one.
        guard rename(temporary.path, file.path) == 0 else {
            let reason = String(cString: strerror(errno))
            try? FileManager.default.removeItem(at: temporary)
            throw .unwritable(path: file.path, reason: reason)
        }
        return DPoPSigner(privateKey: key)
    }

    /// Moves the key file `source` to `destination` (replacing one there) in one step: a new pairing's key takes
    /// the place of the old one only once the bridge accepted the pairing.
    /// - Throws: ``DPoPClientKeyError/unwritable(path:reason:)``.
    public static func move(_ source: URL, to destination: URL) throws(DPoPClientKeyError) {
        guard rename(source.path, destination.path) == 0 else {
            throw .unwritable(path: destination.path, reason: String(cString: strerror(errno)))
        }
    }

    /// Reads the key in `file`.
    /// - Throws: ``DPoPClientKeyError/missing(path:)`` when there is no file, ``DPoPClientKeyError/unreadable(path:reason:)``
    ///   when it is not a P-256 private key in PEM, ``DPoPClientKeyError/tooOpen(path:mode:)`` when others than its
    ///   owner may read or write it.
    public static func load(from file: URL) throws(DPoPClientKeyError) -> DPoPSigner {
        guard FileManager.default.fileExists(atPath: file.path) else { throw .missing(path: file.path) }
        let attributes = try? FileManager.default.attributesOfItem(atPath: file.path)
        if let mode = (attributes?[.posixPermissions] as? NSNumber)?.intValue, mode & 0o077 != 0 {
            throw .tooOpen(path: file.path, mode: mode)
        }
        let text: String
        do {
            text = try String(contentsOf: file, encoding: .utf8)
        } catch {
            throw .unreadable(path: file.path, reason: "\(error)")
        }
        do {
            return DPoPSigner(privateKey: try P256.Signing.PrivateKey(pemRepresentation: text))
        } catch {
            throw .unreadable(path: file.path, reason: "not a P-256 private key in PEM")
        }
    }
}

/// Why this client's DPoP key could not be had, with what to do.
public enum DPoPClientKeyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The key the tokens are bound to is not there (deleted, or the credentials were copied without it).
    case missing(path: String)
    /// The file is there but holds no usable key.
    case unreadable(path: String, reason: String)
    /// The file may be read or written by others than its owner.
    case tooOpen(path: String, mode: Int)
    /// The key could not be written.
    case unwritable(path: String, reason: String)

    /// The message for the user.
    public var description: String {
        switch self {
        case .missing(let path):
            return "this device's tokens are bound to a key (DPoP) that is gone: \(path) does not exist. Pair again with a new code from 'oa-bridge pair' on the desktop"
        case .unreadable(let path, let reason):
            return "the DPoP key in \(path) cannot be used (\(reason)); pair again to make a new one"
        case .tooOpen(let path, let mode):
            return "the DPoP key in \(path) may be read by others (mode \(String(mode, radix: 8))): it is refused. Run 'chmod 600 \(path)' if nobody else could have read it, else pair again"
        case .unwritable(let path, let reason):
            return "the DPoP key could not be written to \(path): \(reason)"
        }
    }
}
