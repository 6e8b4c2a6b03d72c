/// Why a text or a byte string is not a ``CertificatePin``.
public enum CertificatePinError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The text does not start with `sha256/`.
    case missingPrefix
    /// What follows `sha256/` is not standard base64.
    case notBase64
    /// The digest is not 32 bytes long.
    case wrongDigestLength(Int)
    /// The bytes are not a DER-encoded X.509 certificate.
    case notACertificate(String)

    /// A message a user can act on.
    public var description: String {
        switch self {
        case .missingPrefix:
            "a pin starts with sha256/ followed by base64 (as oa-bridge pair prints it)"
        case .notBase64:
            "the pin after sha256/ is not standard base64; copy it again from oa-bridge pair"
        case .wrongDigestLength(let count):
            "the pin holds \(count) bytes, a SHA-256 pin holds 32; copy it again from oa-bridge pair"
        case .notACertificate(let reason):
            "the peer's certificate cannot be read (\(reason))"
        }
    }
}
