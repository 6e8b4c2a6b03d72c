import BridgeTLS
import Foundation
import Testing

@Suite("CertificatePin", .tags(.externalTool))
struct CertificatePinTests {
    @Test("The pin is what openssl computes over the certificate's SubjectPublicKeyInfo")
    func matchesOpenSSL() throws {
        let directory = try TemporaryDirectory()
        let identity = try BridgeIdentity.loadOrCreate(in: directory.url, names: BridgeIdentityNames(hostName: "desk"))
        let certificate = directory.url.appendingPathComponent(BridgeIdentity.certificateFileName).path
        let expected = try OpenSSL.pin(ofCertificateAt: certificate)
        #expect(identity.pin.description == "sha256/" + expected)
        #expect(identity.pin.curlArgument == "sha256//" + expected)
        #expect(identity.pin.matches(certificateDER: identity.certificateDER))
    }

    @Test("Parsing takes the printed form and curl's, and gives the same pin back")
    func parsesBothForms() throws {
        let digest = (0..<32).map { UInt8($0) }
        let pin = try CertificatePin(digest: digest)
        #expect(try CertificatePin(parsing: pin.description) == pin)
        #expect(try CertificatePin(parsing: "  " + pin.curlArgument + "\n") == pin)
        #expect(pin.description.hasPrefix("sha256/"))
        #expect(pin.base64.count == 44)
        let json = try JSONEncoder().encode([pin])
        #expect(String(decoding: json, as: UTF8.self).contains("sha256"))
        #expect(try JSONDecoder().decode([CertificatePin].self, from: json) == [pin])
    }

    @Test("A digest whose base64 starts with a slash parses in both forms (1 pin in 64; once failed a CI run)")
    func leadingSlashDigest() throws {
        // 0xFC… encodes as "/…" in standard base64.
        let digest = [UInt8(0xFC)] + (1..<32).map { UInt8($0) }
        let pin = try CertificatePin(digest: digest)
        #expect(pin.base64.hasPrefix("/"))
        #expect(try CertificatePin(parsing: pin.description) == pin)
        #expect(try CertificatePin(parsing: pin.curlArgument) == pin)
        let json = try JSONEncoder().encode([pin])
        #expect(try JSONDecoder().decode([CertificatePin].self, from: json) == [pin])
    }

    @Test("Bad pins are refused with the reason")
    func refusesBadText() {
        #expect(throws: CertificatePinError.missingPrefix) { try CertificatePin(parsing: "md5/AAAA") }
        #expect(throws: CertificatePinError.notBase64) { try CertificatePin(parsing: "sha256/not*base64") }
        #expect(throws: CertificatePinError.wrongDigestLength(3)) { try CertificatePin(parsing: "sha256/AAAA") }
    }

    @Test("Bytes that are not a certificate never match a pin")
    func garbageDoesNotMatch() throws {
        let pin = try CertificatePin(digest: Array(repeating: 7, count: 32))
        #expect(!pin.matches(certificateDER: [0x30, 0x03, 0x02, 0x01, 0x01]))
        #expect(throws: CertificatePinError.self) { try CertificatePin(certificateDER: [1, 2, 3]) }
    }
}

@Suite("CertificatePin of a certificate", .tags(.externalTool))
struct CertificatePinOfCertificateTests {
    @Test("The pin of the DER certificate, of the parsed certificate and of its key agree (and with openssl)")
    func threeWaysAgree() throws {
        let directory = try TemporaryDirectory()
        let identity = try BridgeIdentity.loadOrCreate(in: directory.url, names: BridgeIdentityNames(hostName: "desk"))
        let fromDER = try CertificatePin(certificateDER: identity.certificateDER)
        #expect(fromDER == identity.pin)
        #expect(try BridgeIdentity.storedPin(in: directory.url) == fromDER)
        let path = directory.url.appendingPathComponent(BridgeIdentity.certificateFileName).path
        #expect(fromDER.base64 == (try OpenSSL.pin(ofCertificateAt: path)))
    }
}
