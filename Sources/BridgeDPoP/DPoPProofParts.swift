package import Crypto
import Foundation

/// A DPoP proof taken apart once (RFC 7515 compact serialization): the decoded header and claims, the signing input
/// (`header.payload` as sent) and the signature.
///
/// The proof's check needs nothing else, so nothing is decoded twice.
package struct DPoPProofParts: Sendable {
    /// The protected header's members a DPoP proof uses; others are ignored.
    struct Header: Decodable, Sendable {
        /// The `jwk` members a P-256 key has, and whether private material (`d`) came along.
        struct JWK: Decodable, Sendable {
            var kty: String?
            var crv: String?
            var x: String?
            var y: String?
            var hasPrivatePart: Bool

            enum CodingKeys: String, CodingKey { case kty, crv, x, y, d }

            init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: CodingKeys.self)
                kty = try? container.decodeIfPresent(String.self, forKey: .kty)
                crv = try? container.decodeIfPresent(String.self, forKey: .crv)
                x = try? container.decodeIfPresent(String.self, forKey: .x)
                y = try? container.decodeIfPresent(String.self, forKey: .y)
                hasPrivatePart = container.contains(.d)
            }
        }

        var typ: String?
        var alg: String?
        var jwk: JWK?

        enum CodingKeys: String, CodingKey { case typ, alg, jwk }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            typ = try? container.decodeIfPresent(String.self, forKey: .typ)
            alg = try? container.decodeIfPresent(String.self, forKey: .alg)
            jwk = try? container.decodeIfPresent(JWK.self, forKey: .jwk)
        }
    }

    let header: Header
    /// The proof's claims.
    package let claims: DPoPProofClaims
    /// The bytes the signature covers: `BASE64URL(header) "." BASE64URL(payload)`, as sent.
    let signingInput: ArraySlice<UInt8>
    /// The raw signature (for ES256, r || s, 64 bytes).
    let signature: Data

    private static let decoder = JSONDecoder()
    private static let notAJWS = DPoPError.malformedProof("it is not a compact JWS whose claims have htm, htu, iat and jti")

    /// Splits and decodes `proof`; ``DPoPError/malformedProof(_:)`` when it is not three base64url parts whose first
    /// two are JSON objects, the second with `htm`, `htu`, `iat` and `jti`.
    package init(_ proof: String) throws(DPoPError) {
        let bytes = Array(proof.utf8)
        guard let first = bytes.firstIndex(of: UInt8(ascii: ".")),
              let second = bytes[(first + 1)...].firstIndex(of: UInt8(ascii: ".")),
              !bytes[(second + 1)...].contains(UInt8(ascii: ".")),
              let headerJSON = Data(base64URLEncoded: bytes[..<first]),
              let claimsJSON = Data(base64URLEncoded: bytes[(first + 1)..<second]),
              let signature = Data(base64URLEncoded: bytes[(second + 1)...])
        else { throw Self.notAJWS }
        do {
            header = try Self.decoder.decode(Header.self, from: headerJSON)
            claims = try Self.decoder.decode(DPoPProofClaims.self, from: claimsJSON)
        } catch {
            throw Self.notAJWS
        }
        signingInput = bytes[..<second]
        self.signature = signature
    }

    /// The header's `typ`, `alg` and `jwk` as RFC 9449 §4.2 wants them (dpop+jwt, ES256, a public P-256 key), and the
    /// key from `cache`.
    package func key(from cache: DPoPKeyCache) throws(DPoPError) -> DPoPKeyCache.Entry {
        guard header.typ == "dpop+jwt" else { throw .malformedProof("its typ is not dpop+jwt") }
        guard let alg = header.alg else { throw .malformedProof("it has no alg") }
        guard alg == "ES256" else { throw .unsupportedAlgorithm(alg) }
        guard let jwk = header.jwk else { throw .malformedProof("it has no jwk header") }
        guard jwk.kty == "EC" else { throw .malformedProof("the jwk header is not an EC key (kty EC)") }
        guard jwk.crv == "P-256" else { throw .malformedProof("the jwk header's curve is not P-256") }
        guard !jwk.hasPrivatePart else {
            throw .malformedProof("the jwk header carries a private key (d); send the public key only")
        }
        guard let x = jwk.x, let y = jwk.y else {
            throw .malformedProof("the jwk header's x and y are not two 32-byte base64url coordinates")
        }
        return try cache.key(x: x, y: y)
    }

    /// Whether the signature is `key`'s ES256 signature of the signing input (swift-crypto's P-256 ECDSA over SHA-256).
    package func isSigned(by key: P256.Signing.PublicKey) -> Bool {
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
        return key.isValidSignature(signature, for: SHA256.hash(data: signingInput))
    }
}
