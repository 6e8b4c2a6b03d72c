public import Foundation
import NIOSSL

/// The MagicDNS name's certificate as tailscaled hands it out (issue 11 item 6): the chain (leaf first) and its
/// private key, checked to belong together, and the leaf's validity.
///
/// Made from the LocalAPI's `?type=pair` answer: PEM blocks, the private key and the certificates, in any order.
/// The key never leaves this value except into BoringSSL; it is never logged.
public struct TailscaleCertificate: Sendable {
    /// The certificate chain, leaf first.
    let chain: [NIOSSLCertificate]
    /// The leaf's private key.
    let privateKey: NIOSSLPrivateKey
    /// When the leaf becomes valid.
    public let notValidBefore: Date
    /// When the leaf expires.
    public let notValidAfter: Date
    /// The leaf's serial number (hex), to tell a renewed certificate from the old one in logs and tests.
    public let serial: String

    /// Parses tailscaled's `?type=pair` answer.
    ///
    /// Throws ``TailscaleCertificateError/notAPair(_:)`` when a key or a certificate is missing or does not parse,
    /// ``TailscaleCertificateError/keyDoesNotMatch`` when the key is not the leaf's.
    public init(pairPEM data: Data) throws(TailscaleCertificateError) {
        let blocks = Self.pemBlocks(String(decoding: data, as: UTF8.self))
        let keys = blocks.filter { $0.label.hasSuffix("PRIVATE KEY") }
        let certificates = blocks.filter { $0.label == "CERTIFICATE" }
        guard keys.count == 1 else { throw .notAPair("expected one private key, found \(keys.count)") }
        guard !certificates.isEmpty else { throw .notAPair("no certificate") }
        do {
            self.privateKey = try NIOSSLPrivateKey(bytes: Array(keys[0].text.utf8), format: .pem)
        } catch {
            // BoringSSL's reason only: the key's bytes are not in it.
            throw .notAPair("the private key does not parse (\(type(of: error)))")
        }
        do {
            self.chain = try certificates.map { try NIOSSLCertificate(bytes: Array($0.text.utf8), format: .pem) }
        } catch {
            throw .notAPair("a certificate does not parse (\(error))")
        }
        let leaf = chain[0]
        self.notValidBefore = Date(timeIntervalSince1970: TimeInterval(leaf.notValidBefore))
        self.notValidAfter = Date(timeIntervalSince1970: TimeInterval(leaf.notValidAfter))
        self.serial = (leaf.serialNumber).map { String(format: "%02x", $0) }.joined()
        // BoringSSL refuses a key that is not the leaf's when a context is made with both.
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(privateKey))
        configuration.minimumTLSVersion = .tlsv12
        do {
            _ = try NIOSSLContext(configuration: configuration)
        } catch {
            throw .keyDoesNotMatch
        }
    }

    /// Whether the leaf is valid at `date`.
    public func isValid(at date: Date) -> Bool {
        notValidBefore <= date && date < notValidAfter
    }

    /// What the handshake of a client that asked for this name uses instead of the bridge's own identity.
    var override: NIOSSLContextConfigurationOverride {
        var override = NIOSSLContextConfigurationOverride()
        override.certificateChain = chain.map { .certificate($0) }
        override.privateKey = .privateKey(privateKey)
        return override
    }

    /// The PEM blocks of `text`: label (`CERTIFICATE`, `EC PRIVATE KEY`, `PRIVATE KEY`, …) and the block's text.
    static func pemBlocks(_ text: String) -> [(label: String, text: String)] {
        var blocks: [(label: String, text: String)] = []
        var rest = Substring(text)
        while let begin = rest.range(of: "-----BEGIN ") {
            guard let labelEnd = rest[begin.upperBound...].range(of: "-----") else { break }
            let label = String(rest[begin.upperBound..<labelEnd.lowerBound])
            let endMarker = "-----END \(label)-----"
            guard let end = rest[labelEnd.upperBound...].range(of: endMarker) else { break }
            blocks.append((label, String(rest[begin.lowerBound..<end.upperBound]) + "\n"))
            rest = rest[end.upperBound...]
        }
        return blocks
    }
}
