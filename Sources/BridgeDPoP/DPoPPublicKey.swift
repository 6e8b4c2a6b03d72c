public import Crypto
import Foundation
public import JWTKit

/// A device's public key as a DPoP proof carries it: an EC P-256 JWK (`kty` "EC", `crv` "P-256", `x`, `y`), and the
/// key's JWK SHA-256 thumbprint (RFC 7638), which is what a token family is bound to.
///
/// A JWK that carries private material (`d`), another key type or curve, or coordinates that are not a point on P-256
/// is refused: RFC 9449 §4.3 requires the public key, and only ES256 is offered.
public struct DPoPPublicKey: Sendable, Hashable {
    /// The x coordinate, base64url without padding (32 bytes).
    public let x: String
    /// The y coordinate, base64url without padding (32 bytes).
    public let y: String
    /// The RFC 7638 thumbprint: base64url(SHA-256(`{"crv":"P-256","kty":"EC","x":…,"y":…}`)), 43 characters.
    public let thumbprint: String

    /// The key of a P-256 signing key.
    public init(_ key: P256.Signing.PublicKey) {
        let point = key.x963Representation  // 0x04 || x || y
        self.init(validatedX: Data(point.dropFirst().prefix(32)).base64URLEncodedString(),
                  y: Data(point.dropFirst(33)).base64URLEncodedString())
    }

    /// The key a proof's `jwk` header names, checked to be a public EC P-256 key.
    public init(jwk fields: [String: JWTHeaderField]) throws(DPoPError) {
        guard case .string("EC")? = fields["kty"] else { throw .malformedProof("the jwk header is not an EC key (kty EC)") }
        guard case .string("P-256")? = fields["crv"] else { throw .malformedProof("the jwk header's curve is not P-256") }
        guard case .string(let x)? = fields["x"], case .string(let y)? = fields["y"] else {
            throw fields["d"] == nil ? Self.coordinatesRefusal : Self.privatePartRefusal
        }
        self = try Self.verifying(kty: "EC", crv: "P-256", x: x, y: y, hasPrivatePart: fields["d"] != nil).0
    }

    private init(validatedX x: String, y: String) {
        self.x = x
        self.y = y
        // RFC 7638 §3: the required members in lexicographic order, no whitespace.
        let canonical = #"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(y)"}"#
        thumbprint = Data(SHA256.hash(data: Data(canonical.utf8))).base64URLEncodedString()
    }

    private static let privatePartRefusal = DPoPError.malformedProof("the jwk header carries a private key (d); send the public key only")
    private static let coordinatesRefusal = DPoPError.malformedProof("the jwk header's x and y are not two 32-byte base64url coordinates")

    /// The checks of ``init(jwk:)`` on a JWK's members, and the key as swift-crypto verifies with it.
    static func verifying(
        kty: String, crv: String, x: String, y: String, hasPrivatePart: Bool
    ) throws(DPoPError) -> (DPoPPublicKey, P256.Signing.PublicKey) {
        guard kty == "EC" else { throw .malformedProof("the jwk header is not an EC key (kty EC)") }
        guard crv == "P-256" else { throw .malformedProof("the jwk header's curve is not P-256") }
        guard !hasPrivatePart else { throw privatePartRefusal }
        guard let xBytes = Data(base64URLEncoded: x), let yBytes = Data(base64URLEncoded: y),
              xBytes.count == 32, yBytes.count == 32
        else { throw coordinatesRefusal }
        guard let key = try? P256.Signing.PublicKey(x963Representation: [0x04] + xBytes + yBytes) else {
            throw .malformedProof("the jwk header's x and y are not a point on P-256")
        }
        return (DPoPPublicKey(validatedX: x, y: y), key)
    }

    /// The key as a `jwk` header value.
    public var jwk: JWTHeaderField {
        .object(["kty": .string("EC"), "crv": .string("P-256"), "x": .string(x), "y": .string(y)])
    }
}
