import Crypto
import Foundation
import SwiftASN1
import X509

/// Issues the bridge's self-signed certificate for a key and a set of names.
enum SelfSignedCertificate {
    /// How long an issued certificate is valid.
    ///
    /// The pin is the key's, so a re-issue keeps it.
    static let validity: TimeInterval = 365 * 24 * 60 * 60
    /// Re-issue when less than this is left.
    static let renewBefore: TimeInterval = 30 * 24 * 60 * 60

    /// A certificate for `key` naming `names`, valid from an hour before `now` (clock skew) for ``validity``.
    static func issue(
        key: P256.Signing.PrivateKey, names: BridgeIdentityNames, now: Date
    ) throws(BridgeIdentityError) -> Certificate {
        do {
            let signingKey = Certificate.PrivateKey(key)
            let subject = try DistinguishedName {
                OrganizationName("oa-bridge")
                CommonName(names.dnsNames.first ?? "oa-bridge")
            }
            var alternativeNames: [GeneralName] = names.dnsNames.map { .dnsName($0) }
            alternativeNames += names.ipAddresses.map { .ipAddress(ASN1OctetString(contentBytes: $0[...])) }
            // Key identifiers (RFC 5280 4.2.1.1-2; the SHA-1 of the key, as OpenSSL makes them): pyca/cryptography
            // refuses a certificate without them even where it is trusted (issue 26 item 8). They are the key's, so
            // they do not move the pin.
            let keyIdentifier = SubjectKeyIdentifier(hash: signingKey.publicKey)
            let extensions = try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(alternativeNames)
                keyIdentifier
                AuthorityKeyIdentifier(keyIdentifier: keyIdentifier.keyIdentifier)
            }
            return try Certificate(
                version: .v3,
                serialNumber: Certificate.SerialNumber(),
                publicKey: signingKey.publicKey,
                notValidBefore: now.addingTimeInterval(-3600),
                notValidAfter: now.addingTimeInterval(validity),
                issuer: subject,
                subject: subject,
                signatureAlgorithm: .ecdsaWithSHA256,
                extensions: extensions,
                issuerPrivateKey: signingKey)
        } catch {
            throw .cannotIssue(reason: String(describing: error))
        }
    }

    /// Whether `certificate` is still right for `key` and `names` at `now`: same public key, same names, key
    /// identifiers present, and more than ``renewBefore`` left before it expires.
    static func fits(_ certificate: Certificate, key: P256.Signing.PrivateKey, names: BridgeIdentityNames, now: Date) -> Bool {
        guard certificate.publicKey == Certificate.PublicKey(key.publicKey) else { return false }
        guard certificate.notValidAfter.timeIntervalSince(now) > renewBefore, certificate.notValidBefore <= now else {
            return false
        }
        // A certificate from before key identifiers were added is issued again (same key, same pin).
        guard (try? certificate.extensions.subjectKeyIdentifier) != nil, (try? certificate.extensions.authorityKeyIdentifier) != nil
        else { return false }
        guard let extensionValue = try? certificate.extensions.subjectAlternativeNames else { return false }
        let present = Array(extensionValue)
        let wanted: [GeneralName] = names.dnsNames.map { .dnsName($0) }
            + names.ipAddresses.map { .ipAddress(ASN1OctetString(contentBytes: $0[...])) }
        return present == wanted
    }
}
