package import Crypto
import Synchronization

/// The keys of recent DPoP proofs, by their `x` and `y`: a phone signs every request with one key, so its
/// coordinates are decoded, checked to be a point on P-256 and hashed into a thumbprint once, not per proof.
///
/// Only keys that passed those checks are kept. Bounded: at `capacity` an arbitrary entry makes room (a flood of new
/// keys costs its sender a signature each and the bridge no more than a miss).
package final class DPoPKeyCache: Sendable {
    /// A key as a proof names it and as swift-crypto verifies with it.
    package struct Entry: Sendable {
        package let key: DPoPPublicKey
        package let verifying: P256.Signing.PublicKey
    }

    /// The most keys kept.
    let capacity: Int
    private let entries = Mutex<[String: Entry]>([:])

    package init(capacity: Int = 1_024) {
        self.capacity = max(1, capacity)
    }

    /// The key with coordinates `x` and `y` (base64url), from the cache or checked now
    /// (``DPoPPublicKey/verifying(kty:crv:x:y:hasPrivatePart:)``).
    package func key(x: String, y: String) throws(DPoPError) -> Entry {
        let name = x + "." + y
        if let hit = entries.withLock({ $0[name] }) { return hit }
        let (key, verifying) = try DPoPPublicKey.verifying(kty: "EC", crv: "P-256", x: x, y: y, hasPrivatePart: false)
        let entry = Entry(key: key, verifying: verifying)
        entries.withLock { table in
            if table.count >= capacity, let any = table.keys.first { table.removeValue(forKey: any) }
            table[name] = entry
        }
        return entry
    }

    /// How many keys are kept (for tests).
    package var count: Int { entries.withLock { $0.count } }
}
