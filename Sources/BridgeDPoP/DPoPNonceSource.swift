public import Crypto
public import Foundation
import Synchronization

/// The bridge's DPoP nonces (RFC 9449 §8): a nonce names a period of `lifetime` and is authenticated with a key only
/// this bridge process holds, so the bridge keeps no list of them.
///
/// A proof must carry the current period's nonce or the previous one's (so a nonce handed out just before a rotation
/// still works); anything else is answered with `use_dpop_nonce` and a fresh nonce. A restarted bridge has a new key,
/// and its clients learn the new nonce from the first refusal. The two current nonces are computed once per period,
/// not per proof.
public struct DPoPNonceSource: Sendable {
    /// How long one nonce stays current.
    public let lifetime: Duration
    private let key: SymmetricKey
    private let memo = Memo()

    /// The last period's nonces, so a period's HMACs are computed once.
    private final class Memo: Sendable {
        struct Pair {
            var period: Int64
            var current: String
            var previous: String
        }

        let pair = Mutex<Pair?>(nil)
    }

    /// Nonces rotated every `lifetime` (at least 1 s), authenticated with `key` (a new random one by default).
    public init(lifetime: Duration = .seconds(300), key: SymmetricKey = SymmetricKey(size: .bits256)) {
        self.lifetime = max(lifetime, .seconds(1))
        self.key = key
    }

    /// The nonce to hand out at `now`.
    public func current(at now: Date) -> String {
        nonces(at: now).current
    }

    /// Whether `nonce` is the current period's nonce or the previous one's.
    public func isValid(_ nonce: String, at now: Date) -> Bool {
        let pair = nonces(at: now)
        return nonce == pair.current || nonce == pair.previous
    }

    private func nonces(at now: Date) -> Memo.Pair {
        let present = period(at: now)
        if let known = memo.pair.withLock({ $0 }), known.period == present { return known }
        let pair = Memo.Pair(period: present, current: nonce(forPeriod: present), previous: nonce(forPeriod: present - 1))
        memo.pair.withLock { $0 = pair }
        return pair
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
