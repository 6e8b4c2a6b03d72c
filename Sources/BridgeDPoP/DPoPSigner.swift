public import Crypto
public import Foundation
import JWTKit

/// A device's side of DPoP: its P-256 key, and a fresh proof for each request (RFC 9449 §4.2).
public struct DPoPSigner: Sendable {
    /// The device's private key; it never leaves the device.
    public let privateKey: P256.Signing.PrivateKey

    /// A signer with `privateKey` (a new random key by default).
    public init(privateKey: P256.Signing.PrivateKey = P256.Signing.PrivateKey()) {
        self.privateKey = privateKey
    }

    /// The public key a proof carries, and its thumbprint.
    public var publicKey: DPoPPublicKey { DPoPPublicKey(privateKey.publicKey) }

    /// A proof for a request with `method` to `uri` (query and fragment are dropped), carrying `ath` for
    /// `accessToken` and the bridge's `nonce` where given; a new random `jti` unless one is passed.
    public func proof(method: String, uri: String, accessToken: String? = nil, nonce: String? = nil,
                      now: Date = Date(), jti: String = UUID().uuidString) async throws -> String {
        var htu = uri
        if let cut = htu.firstIndex(where: { $0 == "?" || $0 == "#" }) { htu = String(htu[..<cut]) }
        let claims = DPoPProofClaims(htm: method, htu: htu, iat: Int64(now.timeIntervalSince1970.rounded(.down)),
                                     jti: jti, ath: accessToken.map(dpopAccessTokenHash), nonce: nonce)
        let keys = await JWTKeyCollection().add(ecdsa: try ES256PrivateKey(backing: privateKey))
        let header: JWTHeader = ["typ": .string("dpop+jwt"), "alg": .string("ES256"), "jwk": publicKey.jwk]
        return try await keys.sign(claims, header: header)
    }
}
