import Crypto
public import Foundation
import SwiftASN1
import X509

/// The bridge's TLS identity: an ECDSA P-256 key and a self-signed certificate for it, kept in the state directory
/// (`tls-key.pem`, mode 0600, and `tls-cert.pem`) and reused across restarts so the pin phones stored stays valid.
///
/// ``loadOrCreate(in:names:now:)`` makes the key on first use; later it re-issues the certificate with the same key
/// (same pin) when the names changed or it nears expiry. ``rotate(in:names:now:)`` makes a new key: a new pin, and
/// every phone must pair again.
public struct BridgeIdentity: Sendable {
    /// What ``loadOrCreate(in:names:now:)`` did.
    public enum Origin: Sendable, Equatable {
        /// A new key and certificate were made (first use, or after ``rotate(in:names:now:)``).
        case created
        /// Key and certificate were read as stored.
        case loaded
        /// The key was read and the certificate re-issued (names changed, expiry near, or it did not match the key).
        case reissued
    }

    /// The key file's name in the state directory.
    public static let keyFileName = "tls-key.pem"
    /// The certificate file's name in the state directory.
    public static let certificateFileName = "tls-cert.pem"

    /// The certificate, DER-encoded (what the TLS handshake sends).
    public let certificateDER: [UInt8]
    /// The certificate in PEM.
    public let certificatePEM: String
    /// The private key in PEM (PKCS #8).
    ///
    /// Never log it.
    public let privateKeyPEM: String
    /// The pin clients check: SHA-256 over the certificate's SubjectPublicKeyInfo.
    public let pin: CertificatePin
    /// The certificate's DNS subject alternative names.
    public let dnsNames: [String]
    /// When the certificate expires.
    public let notValidAfter: Date
    /// How this value came to be.
    public let origin: Origin

    init(key: P256.Signing.PrivateKey, certificate: Certificate, origin: Origin) throws(BridgeIdentityError) {
        do {
            var serializer = DER.Serializer()
            try serializer.serialize(certificate)
            self.certificateDER = serializer.serializedBytes
            self.certificatePEM = try certificate.serializeAsPEM().pemString
        } catch {
            throw .cannotIssue(reason: String(describing: error))
        }
        self.privateKeyPEM = key.pemRepresentation
        self.pin = CertificatePin(certificate: certificate)
        self.dnsNames = ((try? certificate.extensions.subjectAlternativeNames) ?? nil).map { names in
            names.compactMap { if case .dnsName(let name) = $0 { name } else { nil } }
        } ?? []
        self.notValidAfter = certificate.notValidAfter
        self.origin = origin
    }

    /// The identity in `directory` (the state directory, created private if missing): made on first use, else read,
    /// with the certificate re-issued for the same key when `names` changed or it expires within 30 days.
    public static func loadOrCreate(
        in directory: URL, names: BridgeIdentityNames, now: Date = Date()
    ) throws(BridgeIdentityError) -> BridgeIdentity {
        let files = IdentityFiles(directory: directory)
        return try files.locked { () throws(BridgeIdentityError) -> BridgeIdentity in
            guard let key = try files.readKey() else {
                return try create(files: files, names: names, now: now)
            }
            if let certificate = files.readCertificate(),
               SelfSignedCertificate.fits(certificate, key: key, names: names, now: now) {
                return try BridgeIdentity(key: key, certificate: certificate, origin: .loaded)
            }
            let certificate = try SelfSignedCertificate.issue(key: key, names: names, now: now)
            try files.writeCertificate(certificate)
            return try BridgeIdentity(key: key, certificate: certificate, origin: .reissued)
        }
    }

    /// The stored identity's pin without creating or changing anything; `nil` when there is no identity yet.
    public static func storedPin(in directory: URL) throws(BridgeIdentityError) -> CertificatePin? {
        let files = IdentityFiles(directory: directory)
        guard let key = try files.readKey() else { return nil }
        return CertificatePin(publicKey: Certificate.PublicKey(key.publicKey))
    }

    /// Replaces the key and certificate with new ones: a new pin.
    ///
    /// Paired phones refuse the bridge until they pair again; a running `serve` keeps the old identity until it
    /// restarts.
    public static func rotate(
        in directory: URL, names: BridgeIdentityNames, now: Date = Date()
    ) throws(BridgeIdentityError) -> BridgeIdentity {
        let files = IdentityFiles(directory: directory)
        return try files.locked { () throws(BridgeIdentityError) -> BridgeIdentity in
            try create(files: files, names: names, now: now)
        }
    }

    private static func create(files: IdentityFiles, names: BridgeIdentityNames, now: Date) throws(BridgeIdentityError) -> BridgeIdentity {
        let key = P256.Signing.PrivateKey()
        let certificate = try SelfSignedCertificate.issue(key: key, names: names, now: now)
        // Key first: a crash between the two writes leaves a certificate that does not match the key, which the next
        // load re-issues from the (new) key.
        try files.writeKey(key)
        try files.writeCertificate(certificate)
        return try BridgeIdentity(key: key, certificate: certificate, origin: .created)
    }
}

extension BridgeIdentity: CustomStringConvertible, CustomDebugStringConvertible {
    /// The pin, names and expiry, never the key: a value that holds the identity (a configuration, a service) can be
    /// printed or logged (ServiceLifecycle logs its services at debug) without the private key in the output.
    public var description: String {
        "BridgeIdentity(pin: \(pin), dnsNames: \(dnsNames), notValidAfter: \(notValidAfter), origin: \(origin))"
    }

    /// Same as ``description``: the private key is never part of it.
    public var debugDescription: String { description }
}
