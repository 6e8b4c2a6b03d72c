public import Foundation

/// A DPoP proof that passed the checks that need no token family: well formed, ES256, signed by the key in its header,
/// for this request's method and URI, fresh, with the current nonce and the right `ath`.
///
/// ``DPoPVerifier/accept(_:boundTo:now:)`` then checks the binding and records its `jti`.
public struct DPoPVerifiedProof: Sendable, Equatable {
    /// The key that signed the proof.
    public let key: DPoPPublicKey
    /// The proof's claims.
    public let claims: DPoPProofClaims

    /// The key's RFC 7638 thumbprint, what a token family is bound to.
    public var thumbprint: String { key.thumbprint }
    /// When the proof says it was made.
    public var issuedAt: Date { Date(timeIntervalSince1970: Double(claims.iat)) }
}
