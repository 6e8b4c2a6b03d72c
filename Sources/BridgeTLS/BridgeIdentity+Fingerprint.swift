import Crypto

extension BridgeIdentity {
    /// The certificate's SHA-256 fingerprint as browsers show it in their certificate viewers (Chrome and Safari:
    /// "SHA-256 Fingerprint", upper-case hex bytes separated by spaces), so a user accepting the first-time warning on
    /// the phone can compare it with what `serve` printed.
    ///
    /// It changes when the certificate is re-issued for new names (the pin, over the key, does not).
    public var certificateFingerprint: String {
        SHA256.hash(data: certificateDER).map { byte in
            let hex = String(byte, radix: 16, uppercase: true)
            return byte < 0x10 ? "0" + hex : hex
        }.joined(separator: " ")
    }
}
