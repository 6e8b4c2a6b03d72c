import BridgeDPoP
import BridgeHTTP
import BridgePairing
import HTTPTypes

extension Authenticator {
    /// A ``BridgeUpgradeAuthorizer`` for ``BridgeServerConfiguration/authorizeUpgrade``: browser Origin check, per-address
    /// rate limit, token from `Authorization: Bearer`/`DPoP` or `?token=`, and with DPoP on, the proof from the `DPoP`
    /// header or a browser's `?dpop=` (its `htu` the request's URL without query, `http`/`https` by the connection).
    /// Denials carry `"<code>: <message>"` (e.g. `token_expired: …`), never the token, and with DPoP on a
    /// `DPoP-Nonce` (and `WWW-Authenticate: DPoP …` for a refused proof).
    ///
    /// The Origin check compares against the request's `Host` (``BridgeUpgradeRequest/host``); a request with an
    /// `Origin` but no `Host` is refused. Native clients send no `Origin` and are unaffected.
    public func upgradeAuthorizer(allowedOrigins: Set<String> = []) -> BridgeUpgradeAuthorizer {
        { request in
            var presentation: DPoPPresentation?
            if self.activeDPoP != nil {
                let proofs = DPoPFields.proofs(in: request.headers)
                guard proofs.count <= 1 else {
                    return Self.denial(.dpop(.malformedProof("the request carries more than one DPoP header")), policy: self.activeDPoP)
                }
                presentation = DPoPPresentation(
                    method: request.method,
                    uri: DPoPPresentation.targetURI(isTLS: request.isTLS, authority: request.host, path: request.path),
                    proof: proofs.first ?? NetworkPolicy.queryParameter("dpop", fromPath: request.path))
            }
            let decision = await self.checkUpgrade(
                path: request.path,
                authorization: request.headers[.authorization],
                origin: request.headers[.origin],
                host: request.host,
                remoteAddress: request.remoteAddress,
                allowedOrigins: allowedOrigins,
                dpop: presentation)
            switch decision {
            case .allow(let device):
                return .authenticated(device)
            case .deny(let status, let body, _):
                var headers = HTTPFields()
                if let nonce = self.activeDPoP?.currentNonce() { DPoPFields.setNonce(nonce, in: &headers) }
                if status == 401, self.activeDPoP != nil {
                    let named = ["invalid_dpop_proof", "use_dpop_nonce", "invalid_token"].contains(body.error)
                    headers[.wwwAuthenticate] = named ? "DPoP error=\"\(body.error)\", algs=\"ES256\"" : "DPoP algs=\"ES256\""
                }
                return .deny(status: status, message: "\(body.error): \(body.message)", headers: headers)
            }
        }
    }
}

extension Authenticator {
    /// The refusal of `error` before any check ran, with the nonce when DPoP is on.
    static func denial(_ error: PairingError, policy: DPoPPolicy?) -> BridgeUpgradeDecision {
        var headers = HTTPFields()
        if let nonce = policy?.currentNonce() { DPoPFields.setNonce(nonce, in: &headers) }
        headers[.wwwAuthenticate] = "DPoP error=\"\(error.code)\", algs=\"ES256\""
        return .deny(status: error.httpStatus, message: "\(error.code): \(error.message)", headers: headers)
    }
}
