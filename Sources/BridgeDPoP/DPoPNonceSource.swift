import Crypto
import Foundation

/// The bridge's DPoP nonces (RFC 9449 §8): a nonce names a period of `lifetime` and is authenticated with a key only
/// this bridge process holds, so the bridge keeps no list of them. A proof must carry the current period's nonce or
/// the previous one's (so a nonce handed out just before a rotation still works); anything else is answered with
/// `use_dpop_nonce` and a fresh nonce. A restarted bridge has a new key, and its clients learn the new nonce from the
/// first refusal.
public struct DPoPNonceSource: Sendable {
    /// How long one nonce stays current.
    public let lifetime: Duration
    private let key: SymmetricKey

    /// Nonces rotated every `lifetime` (at least 1 s), authenticated with `key` (a new random one by default).
    public init(lifetime: Duration = .seconds(300), key: SymmetricKey = SymmetricKey(size: .bits256)) {
        self.lifetime = max(lifetime, .seconds(1))
        self.key = key
    }

    /// The nonce to hand out at `now`.
    public func current(at now: Date) -> String {
        nonce(forPeriod: period(at: now))
    }

    /// Whether `nonce` is the current period's nonce or the previous one's.
    public func isValid(_ nonce: String, at now: Date) -> Bool {
        let present = period(at: now)
        return nonce == self.nonce(forPeriod: present) || nonce == self.nonce(forPeriod: present - 1)
    }

    private func period(at now: Date) -> Int64 {
        Int64((now.timeIntervalSince1970 / Double(lifetime.components.seconds)).rounded(.down))
    }

    private func nonce(forPeriod period: Int64) -> String {
        var bigEndian = period.bigEndian
        let counter = withUnsafeBytes(of: &bigEndian) { Data($0) }
        let tag = HMAC<SHA256>.authenticationCode(for: counter, using: key)
        return Data(tag.prefix(18)).base64URLEncodedString()
    }
}
