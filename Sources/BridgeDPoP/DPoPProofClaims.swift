import Foundation
public import JWTKit

/// The claims of a DPoP proof (RFC 9449 §4.2): the request's method and URI, when and by whom it was made, and what
/// ties it to the bridge (`nonce`) and to an access token (`ath`).
public struct DPoPProofClaims: JWTPayload, Equatable {
    /// The HTTP method of the request.
    public var htm: String
    /// The HTTP target URI of the request, without query and fragment.
    public var htu: String
    /// When the proof was made, in whole seconds since 1970 (a JWT NumericDate).
    public var iat: Int64
    /// A unique identifier of this proof.
    public var jti: String
    /// base64url(SHA-256(access token)), when an access token is presented with the proof.
    public var ath: String?
    /// The server's nonce, from its last `DPoP-Nonce` header.
    public var nonce: String?

    /// A proof's claims.
    public init(htm: String, htu: String, iat: Int64, jti: String, ath: String? = nil, nonce: String? = nil) {
        self.htm = htm
        self.htu = htu
        self.iat = iat
        self.jti = jti
        self.ath = ath
        self.nonce = nonce
    }

    /// The claims are checked against the request by ``DPoPVerifier``, which knows it; jwt-kit checks only the signature.
    public func verify(using algorithm: some JWTAlgorithm) async throws {}
}
