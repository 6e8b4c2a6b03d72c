import Crypto
import Foundation

/// The `ath` claim for an access token (RFC 9449 §4.2): base64url(SHA-256(the token's ASCII bytes)).
public func dpopAccessTokenHash(_ accessToken: String) -> String {
    Data(SHA256.hash(data: Data(accessToken.utf8))).base64URLEncodedString()
}
