public import Foundation
import Synchronization

/// The `jti`s of accepted DPoP proofs, kept for as long as such a proof could still pass the age check (RFC 9449
/// §11.1), so the same proof is never taken twice.
///
/// Bounded: at most `perKey` identifiers per key and `keys` keys; a key past its bound is refused
/// (``DPoPError/tooManyProofs``) until its old entries age out, so one device cannot push another's entries out. Only
/// proofs that passed every other check (the binding included) are recorded.
public final class DPoPReplayCache: Sendable {
    /// How long an identifier is kept after the proof's `iat`.
    public let retention: Duration
    /// The most identifiers kept for one key.
    public let perKey: Int
    /// The most keys kept.
    public let keys: Int

    private struct Entries {
        var byKey: [String: [String: Date]] = [:]
    }

    private let entries = Mutex(Entries())

    /// A cache keeping identifiers for `retention` after their proof's `iat`.
    public init(retention: Duration, perKey: Int = 4_096, keys: Int = 16_384) {
        self.retention = retention
        self.perKey = max(1, perKey)
        self.keys = max(1, keys)
    }

    /// Records `jti` for the key `thumbprint`; throws ``DPoPError/replayed`` when it was recorded before and has not
    /// expired, ``DPoPError/tooManyProofs`` when the key or the cache is full.
    public func record(jti: String, thumbprint: String, issuedAt: Date, now: Date) throws(DPoPError) {
        let expiry = issuedAt.addingTimeInterval(Double(retention.components.seconds))
        // The key's table is changed in place (`byKey[thumbprint, default:]`): a copy out and back would copy every
        // identifier the key has for each proof.
        let outcome: DPoPError? = entries.withLock { state in
            let known = state.byKey[thumbprint]?.count
            if let until = state.byKey[thumbprint]?[jti], until > now { return .replayed }
            if let known, known >= perKey {
                state.byKey[thumbprint, default: [:]] = state.byKey[thumbprint, default: [:]].filter { $0.value > now }
                guard state.byKey[thumbprint, default: [:]].count < perKey else { return .tooManyProofs }
            }
            if known == nil, state.byKey.count >= keys {
                state.byKey = state.byKey.compactMapValues { ids in
                    let live = ids.filter { $0.value > now }
                    return live.isEmpty ? nil : live
                }
                guard state.byKey.count < keys else { return .tooManyProofs }
            }
            state.byKey[thumbprint, default: [:]][jti] = expiry
            return nil
        }
        if let outcome { throw outcome }
    }

    /// How many identifiers are kept now (for tests and metrics).
    public var count: Int {
        entries.withLock { $0.byKey.values.reduce(0) { $0 + $1.count } }
    }
}
