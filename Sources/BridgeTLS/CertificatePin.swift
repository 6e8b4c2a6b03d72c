import Crypto
public import Foundation
import SwiftASN1
public import X509

/// The pin of a bridge's TLS identity: SHA-256 over the DER SubjectPublicKeyInfo of its certificate.
///
/// Written `sha256/` + standard base64 of the 32-byte digest (the OkHttp form), for example
/// `sha256/47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=`. curl's `--pinnedpubkey sha256//…` checks the same hash
/// (``curlArgument`` gives its spelling). The pin follows the key, not the certificate: a certificate re-issued
/// for new host names or a later expiry keeps the pin; ``BridgeIdentity/rotate(in:names:now:)`` changes it.
public struct CertificatePin: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The prefix of the textual form.
    public static let prefix = "sha256/"

    /// The length of the base64 of a 32-byte digest, padded.
    static let encodedLength = 44

    /// The 32 bytes of the SHA-256 digest.
    public let digest: [UInt8]

    /// A pin from a 32-byte SHA-256 digest.
    ///
    /// Throws ``CertificatePinError/wrongDigestLength(_:)`` for any other length.
    public init(digest: [UInt8]) throws(CertificatePinError) {
        guard digest.count == SHA256.byteCount else { throw .wrongDigestLength(digest.count) }
        self.digest = digest
    }

    /// The pin of a DER-encoded SubjectPublicKeyInfo (hashed as given).
    public init(subjectPublicKeyInfo der: some DataProtocol) {
        self.digest = Array(SHA256.hash(data: der))
    }

    /// The pin of a parsed certificate's public key (its SubjectPublicKeyInfo, DER-encoded).
    public init(certificate: Certificate) {
        self.init(publicKey: certificate.publicKey)
    }

    /// The pin of a DER-encoded X.509 certificate (as a TLS peer presents it): the SubjectPublicKeyInfo is hashed
    /// exactly as the certificate encodes it, as curl and OkHttp do.
    ///
    /// Throws ``CertificatePinError/notACertificate(_:)`` when the bytes do not parse as one.
    public init(certificateDER der: [UInt8]) throws(CertificatePinError) {
        do {
            _ = try Certificate(derEncoded: der)
            self.init(subjectPublicKeyInfo: try Self.subjectPublicKeyInfo(ofCertificateDER: der))
        } catch {
            throw .notACertificate(String(describing: error))
        }
    }

    /// The encoded SubjectPublicKeyInfo inside a DER certificate: `Certificate ::= SEQUENCE { tbsCertificate, … }`,
    /// `TBSCertificate ::= SEQUENCE { [0] version OPTIONAL, serialNumber, signature, issuer, validity, subject,
    /// subjectPublicKeyInfo, … }`.
    static func subjectPublicKeyInfo(ofCertificateDER der: [UInt8]) throws -> ArraySlice<UInt8> {
        let root = try DER.parse(der)
        guard case .constructed(let certificate) = root.content, let tbs = Array(certificate).first,
              case .constructed(let fields) = tbs.content else {
            throw ASN1Error.invalidASN1Object(reason: "not a certificate")
        }
        var remaining = Array(fields)
        if let first = remaining.first, first.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
            remaining.removeFirst()
        }
        guard remaining.count > 5 else { throw ASN1Error.invalidASN1Object(reason: "a certificate without a public key") }
        return remaining[5].encodedBytes
    }

    /// Parses `sha256/<base64>` (also curl's `sha256//<base64>`), surrounding white space ignored.
    ///
    /// Throws ``CertificatePinError`` naming what is wrong with the text.
    public init(parsing text: String) throws(CertificatePinError) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.lowercased().hasPrefix(Self.prefix) else { throw .missingPrefix }
        var encoded = trimmed.dropFirst(Self.prefix.count)
        // curl's form has one more slash. A digest whose base64 itself starts with "/" (1 in 64) is 44 characters
        // already, so the slash is dropped only when one character too many is there.
        if encoded.first == "/", encoded.count == Self.encodedLength + 1 { encoded = encoded.dropFirst() }
        guard let bytes = Data(base64Encoded: String(encoded)) else { throw .notBase64 }
        try self.init(digest: Array(bytes))
    }

    /// The standard base64 of the digest (44 characters, padded).
    public var base64: String { Data(digest).base64EncodedString() }

    /// `sha256/<base64>`: the form in QR payloads, stored pins and `oa-bridge pair`.
    public var description: String { Self.prefix + base64 }

    /// `sha256//<base64>`: the form curl's `--pinnedpubkey` takes.
    public var curlArgument: String { "sha256//" + base64 }

    /// Whether `certificateDER` (a peer's leaf certificate) carries the pinned key.
    ///
    /// Bytes that are not a certificate never match.
    public func matches(certificateDER: [UInt8]) -> Bool {
        guard let other = try? CertificatePin(certificateDER: certificateDER) else { return false }
        return other == self
    }

    /// Encodes as the textual form.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    /// Decodes from the textual form.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        do {
            try self.init(parsing: text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.description)
        }
    }
}

extension CertificatePin {
    /// The pin of a certificate's public key: SHA-256 over its DER SubjectPublicKeyInfo (algorithm and key).
    public init(publicKey: Certificate.PublicKey) {
        var serializer = DER.Serializer()
        // Serializing a public key swift-certificates holds does not fail; an empty digest input would still give a
        // pin that matches nothing real.
        try? serializer.serialize(publicKey)
        self.init(subjectPublicKeyInfo: serializer.serializedBytes)
    }
}
