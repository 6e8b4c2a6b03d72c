import BridgePairing
import HTTPTypes

extension Authenticator {
    /// A ``BridgeUpgradeAuthorizer`` for ``BridgeServerConfiguration/authorizeUpgrade``: browser Origin check, per-address
    /// rate limit, token from `Authorization: Bearer` or `?token=`; denials carry `"<code>: <message>"` (e.g.
    /// `token_expired: …`), never the token.
    ///
    /// The Origin check compares against the request's `Host` (``BridgeUpgradeRequest/host``); a request with an
    /// `Origin` but no `Host` is refused. Native clients send no `Origin` and are unaffected.
    public func upgradeAuthorizer(allowedOrigins: Set<String> = []) -> BridgeUpgradeAuthorizer {
        { request in
            let decision = await self.checkUpgrade(
                path: request.path,
                authorization: request.headers[.authorization],
                origin: request.headers[.origin],
                host: request.host,
                remoteAddress: request.remoteAddress,
                allowedOrigins: allowedOrigins)
            switch decision {
            case .allow(let device):
                return .authenticated(device)
            case .deny(let status, let body, _):
                return .deny(status: status, message: "\(body.error): \(body.message)")
            }
        }
    }
}
