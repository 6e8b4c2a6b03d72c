import Crypto
import Foundation
import SwiftASN1
import X509

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The identity's files in the state directory: read, written atomically (temporary file, fsync, rename; the key
/// created with mode 0600 from the start), and changed under an advisory lock so two processes never interleave.
struct IdentityFiles {
    let directory: URL
    var keyPath: String { directory.appendingPathComponent(BridgeIdentity.keyFileName).path }
    var certificatePath: String { directory.appendingPathComponent(BridgeIdentity.certificateFileName).path }
    var lockPath: String { directory.appendingPathComponent("tls.lock").path }

    /// Runs `body` holding an exclusive `flock` on `tls.lock`, creating the directory (mode 0700) if missing.
    func locked<T>(_ body: () throws(BridgeIdentityError) -> T) throws(BridgeIdentityError) -> T {
        try prepareDirectory()
        let descriptor = open(lockPath, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw storageError(lockPath) }
        defer { close(descriptor) }
        guard flock(descriptor, LOCK_EX) == 0 else { throw storageError(lockPath) }
        defer { flock(descriptor, LOCK_UN) }
        return try body()
    }

    /// The stored key, `nil` when there is none; ``BridgeIdentityError/unreadableKey(path:)`` when it is damaged.
    func readKey() throws(BridgeIdentityError) -> P256.Signing.PrivateKey? {
        guard let text = try read(keyPath) else { return nil }
        do {
            return try P256.Signing.PrivateKey(pemRepresentation: text)
        } catch {
            throw .unreadableKey(path: keyPath)
        }
    }

    /// The stored certificate, `nil` when missing or unreadable (it is re-issued from the key then).
    func readCertificate() -> Certificate? {
        guard let text = try? read(certificatePath) else { return nil }
        return try? Certificate(pemEncoded: text)
    }

    func writeKey(_ key: P256.Signing.PrivateKey) throws(BridgeIdentityError) {
        try writeAtomically(key.pemRepresentation, to: keyPath, mode: 0o600)
    }

    func writeCertificate(_ certificate: Certificate) throws(BridgeIdentityError) {
        let pem: String
        do {
            pem = try certificate.serializeAsPEM().pemString
        } catch {
            throw .cannotIssue(reason: String(describing: error))
        }
        try writeAtomically(pem + "\n", to: certificatePath, mode: 0o644)
    }

    private func prepareDirectory() throws(BridgeIdentityError) {
        let path = directory.path
        do {
            try FileManager.default.createDirectory(atPath: directory.deletingLastPathComponent().path, withIntermediateDirectories: true)
        } catch {
            throw .storage(path: path, reason: error.localizedDescription)
        }
        if mkdir(path, 0o700) != 0 && errno != EEXIST { throw storageError(path) }
    }

    private func read(_ path: String) throws(BridgeIdentityError) -> String? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .storage(path: path, reason: "cannot read it")
        }
        return String(decoding: data, as: UTF8.self)
    }

    private func writeAtomically(_ text: String, to path: String, mode: mode_t) throws(BridgeIdentityError) {
        let temporary = path + ".tmp-\(getpid())"
        unlink(temporary)
        let descriptor = open(temporary, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw storageError(temporary) }
        let bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            let result = bytes[written...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if result < 0 {
                if errno == EINTR { continue }
                let error = storageError(temporary)
                close(descriptor)
                unlink(temporary)
                throw error
            }
            written += result
        }
        // The mode is exact whatever the umask was.
        guard fchmod(descriptor, mode) == 0, fsync(descriptor) == 0 else {
            let error = storageError(temporary)
            close(descriptor)
            unlink(temporary)
            throw error
        }
        close(descriptor)
        guard rename(temporary, path) == 0 else {
            let error = storageError(path)
            unlink(temporary)
            throw error
        }
        let directoryDescriptor = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryDescriptor >= 0 {
            fsync(directoryDescriptor)
            close(directoryDescriptor)
        }
    }

    private func storageError(_ path: String) -> BridgeIdentityError {
        .storage(path: path, reason: String(cString: strerror(errno)))
    }
}
