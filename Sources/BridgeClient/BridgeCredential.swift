/// What a client presents to a bridge: an access token, and for a token family bound to this client's key (DPoP,
/// RFC 9449) the key that signs a proof for each request.
///
/// A credential is passed explicitly to everything that authenticates (``WebSocketConnector``'s upgrade and HTTP
/// requests, ``BridgeRPCClient``, ``BridgeClientSession``, ``ACPRelay``); nothing looks a token's key up elsewhere.
/// ``TokenVault/credential()`` hands out the current one, refreshed when due:
///
/// ```swift
/// let vault = TokenVault(file: tokensFile)
/// let session = try await BridgeClientSession.connect(
///     to: candidates, credential: BridgeClientSession.credential(vault: vault), logger: logger)
/// ```
///
/// A token from elsewhere (`--token`, a bridge's unbound family) is ``bearer(_:)``.
public struct BridgeCredential: Sendable {
    /// The access token (never logged).
    public let accessToken: String
    /// The key the token's family is bound to; `nil` for a bearer token.
    public let proofKey: DPoPClientBinding?

    /// A credential for `accessToken`, bound to `proofKey` when given.
    public init(accessToken: String, proofKey: DPoPClientBinding? = nil) {
        self.accessToken = accessToken
        self.proofKey = proofKey
    }

    /// An unbound token, sent as `Authorization: Bearer` (or `?token=` where headers cannot be set).
    public static func bearer(_ accessToken: String) -> BridgeCredential {
        BridgeCredential(accessToken: accessToken)
    }

    /// The `Authorization` scheme it is sent with: `DPoP` when bound to a key, else `Bearer`.
    public var scheme: String { proofKey == nil ? "Bearer" : "DPoP" }

    /// The `Authorization` header's value (`Bearer <token>` or `DPoP <token>`).
    var authorization: String { "\(scheme) \(accessToken)" }
}

extension BridgeCredential: CustomStringConvertible {
    /// The scheme only: a credential never prints its token.
    public var description: String { "BridgeCredential(\(scheme))" }
}
