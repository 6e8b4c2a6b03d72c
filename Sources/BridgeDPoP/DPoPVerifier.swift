public import Foundation

/// The bridge's check of DPoP proofs (RFC 9449 §4.3), in two steps.
///
/// 1. ``check(_:for:now:)``: the proof alone against the request: a compact JWS of at most 8 KiB with `typ`
///    `dpop+jwt`, `alg` ES256 and a public P-256 `jwk`; the signature verifies with that key (swift-crypto's P-256
///    ECDSA); `htm` and `htu` match the request; `iat` is no older than ``maxAge`` and no further ahead than
///    ``allowedSkew``; the nonce is current (when the bridge uses nonces); `ath` hashes the access token presented;
///    `jti` is 1–128 characters.
/// 2. ``accept(_:boundTo:now:)``: once the caller knows which token family the request is for: the proof's key is the
///    one the family is bound to, and its `jti` has not been used (it is recorded then). Keeping this second step apart
///    means only proofs from a family's own key can fill the replay cache.
///
/// The proof is decoded once (`DPoPProofParts`); a key seen before is not decoded, checked or hashed again
/// (`DPoPKeyCache`), nor is a request URI normalised again (`DPoPTargetURI.Memo`).
public struct DPoPVerifier: Sendable {
    /// The oldest `iat` accepted.
    public let maxAge: Duration
    /// How far a device's clock may run ahead.
    public let allowedSkew: Duration
    /// The nonces proofs must carry; nil when the bridge asks for none.
    public let nonces: DPoPNonceSource?
    /// The `jti`s already used.
    public let replayCache: DPoPReplayCache
    /// The keys of recent proofs, checked once each.
    let keys = DPoPKeyCache()
    /// The request URIs seen, normalised once each.
    let targets = DPoPTargetURI.Memo()

    /// The longest proof accepted (a P-256 proof is about 600 bytes).
    public static let maximumProofLength = 8_192

    /// A verifier with the given bounds; the replay cache keeps identifiers for `maxAge + allowedSkew`.
    public init(nonces: DPoPNonceSource? = DPoPNonceSource(), maxAge: Duration = .seconds(120),
                allowedSkew: Duration = .seconds(60)) {
        self.nonces = nonces
        self.maxAge = maxAge
        self.allowedSkew = allowedSkew
        replayCache = DPoPReplayCache(retention: maxAge + allowedSkew)
    }

    /// Step 1: the proof against the request.
    ///
    /// Throws the first check that fails.
    public func check(_ proof: String, for request: DPoPRequest, now: Date) async throws(DPoPError) -> DPoPVerifiedProof {
        guard !proof.isEmpty else { throw .missingProof }
        guard proof.utf8.count <= Self.maximumProofLength else {
            throw .malformedProof("it is longer than \(Self.maximumProofLength) bytes")
        }
        let parts = try DPoPProofParts(proof)
        let key = try parts.key(from: keys)
        guard parts.isSigned(by: key.verifying) else { throw .badSignature }
        let claims = parts.claims
        guard (1...128).contains(claims.jti.count) else { throw .malformedProof("its jti is not 1 to 128 characters") }
        guard claims.htm == request.method else { throw .wrongMethod(expected: request.method, proof: claims.htm) }
        guard let expected = targets.normalized(request.uri) else {
            throw .wrongURI(expected: request.uri, proof: claims.htu)
        }
        // The same text names the same URI; anything else is compared after normalisation.
        if claims.htu != request.uri {
            guard let named = DPoPTargetURI(claims.htu), named == expected else {
                throw .wrongURI(expected: expected.normalized, proof: claims.htu)
            }
        }
        let age = now.timeIntervalSince1970 - Double(claims.iat)
        if age > Double(maxAge.components.seconds) { throw .stale(age: .seconds(age)) }
        if -age > Double(allowedSkew.components.seconds) { throw .issuedInTheFuture(ahead: .seconds(-age)) }
        if let accessToken = request.accessToken, claims.ath != dpopAccessTokenHash(accessToken) {
            throw .accessTokenHashMismatch
        }
        if let nonces {
            guard let nonce = claims.nonce, nonces.isValid(nonce, at: now) else {
                throw .nonceRequired(nonces.current(at: now))
            }
        }
        return DPoPVerifiedProof(key: key.key, claims: claims)
    }

    /// Step 2: the proof's key is `thumbprint` (the token family's binding; nil where no family exists yet, as at the
    /// pairing exchange), and its `jti` is new; records the `jti`.
    public func accept(_ proof: DPoPVerifiedProof, boundTo thumbprint: String?, now: Date) throws(DPoPError) {
        if let thumbprint, thumbprint != proof.thumbprint { throw .keyMismatch }
        try replayCache.record(jti: proof.claims.jti, thumbprint: proof.thumbprint, issuedAt: proof.issuedAt, now: now)
    }
}
