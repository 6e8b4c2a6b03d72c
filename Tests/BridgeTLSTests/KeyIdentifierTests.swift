import BridgeTLS
import Crypto
import Foundation
import SwiftASN1
import Testing
import X509

/// Issue 26 item 8: the certificate carries Subject and Authority Key Identifiers (pyca/cryptography's verifier
/// refuses one without them even when it is trusted); a stored certificate from before is issued again for the same
/// key, so the pin phones hold stays valid.
@Suite("Key identifiers in the certificate", .tags(.externalTool))
struct KeyIdentifierTests {
    let names = BridgeIdentityNames(hostName: "desk", addresses: ["192.168.1.20"], tailscaleName: nil)

    @Test("a new certificate has SKI and AKI, both the key's SHA-1 as OpenSSL reads them")
    func newCertificate() throws {
        let directory = try TemporaryDirectory()
        let identity = try BridgeIdentity.loadOrCreate(in: directory.url, names: names)
        let certificate = try Certificate(derEncoded: identity.certificateDER)
        let subject = try #require(try certificate.extensions.subjectKeyIdentifier)
        let authority = try #require(try certificate.extensions.authorityKeyIdentifier)
        #expect(authority.keyIdentifier == subject.keyIdentifier)
        #expect(subject.keyIdentifier.count == 20)
        let text = try OpenSSL.run(["x509", "-noout", "-ext", "subjectKeyIdentifier,authorityKeyIdentifier", "-in",
                                    directory.url.appendingPathComponent(BridgeIdentity.certificateFileName).path])
        let hex = subject.keyIdentifier.map { String(format: "%02X", $0) }.joined(separator: ":")
        #expect(text.components(separatedBy: hex).count == 3, "SKI and AKI both \(hex) in:\n\(text)")
    }

    @Test("a stored certificate without key identifiers is issued again with the same key and pin")
    func legacyCertificateIsReissued() throws {
        let directory = try TemporaryDirectory()
        let first = try BridgeIdentity.loadOrCreate(in: directory.url, names: names)
        // What earlier versions issued: the same extensions but the key identifiers.
        let key = try P256.Signing.PrivateKey(pemRepresentation: first.privateKeyPEM)
        let signingKey = Certificate.PrivateKey(key)
        let subject = try DistinguishedName { CommonName("desk") }
        let current = try Certificate(derEncoded: first.certificateDER)
        let legacy = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: signingKey.publicKey,
            notValidBefore: current.notValidBefore, notValidAfter: current.notValidAfter, issuer: subject, subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                try #require(try current.extensions.subjectAlternativeNames)
            },
            issuerPrivateKey: signingKey)
        try legacy.serializeAsPEM().pemString.write(
            to: directory.url.appendingPathComponent(BridgeIdentity.certificateFileName), atomically: true, encoding: .utf8)

        let again = try BridgeIdentity.loadOrCreate(in: directory.url, names: names)
        #expect(again.origin == .reissued)
        #expect(again.pin == first.pin)
        #expect(try Certificate(derEncoded: again.certificateDER).extensions.subjectKeyIdentifier != nil)
    }
}
