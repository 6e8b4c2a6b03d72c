import BridgeDPoP
import BridgeHTTP
public import BridgePairing
import HTTPTypes

extension Authenticator {
    /// A ``BridgeUpgradeAuthorizer`` for ``BridgeServerConfiguration/authorizeUpgrade``: browser Origin check, per-address
    /// rate limit, token from `Authorization: Bearer`/`DPoP` or `?token=`, and with DPoP on, the proof from the `DPoP`
    /// header or a browser's `?dpop=` (its `htu` the request's URL without query, `http`/`https` by the connection).
    ///
    /// Denials are typed answers (``JSONErrorResponse``: status, code such as `token_expired`, message, a `Retry-After`
    /// when rate limited), never carrying the token, and with DPoP on a `DPoP-Nonce` (and `WWW-Authenticate: DPoP …` for a
    /// 401).
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
            case .deny(let status, let body, let retryAfter):
                var refusal = JSONErrorResponse(status: HTTPResponse.Status(code: status), code: body.error, message: body.message)
                if let retryAfter {
                    refusal.headers[.retryAfter] = "\(retryAfter)"
                    refusal.extra["retry_after"] = retryAfter
                }
                if let nonce = self.activeDPoP?.currentNonce() { DPoPFields.setNonce(nonce, in: &refusal.headers) }
                if status == 401, self.activeDPoP != nil {
                    let named = ["invalid_dpop_proof", "use_dpop_nonce", "invalid_token"].contains(body.error)
                    refusal.headers[.wwwAuthenticate] = named ? "DPoP error=\"\(body.error)\", algs=\"ES256\"" : "DPoP algs=\"ES256\""
                }
                return .deny(refusal)
            }
        }
    }
}

extension Authenticator {
    /// The refusal of `error` before any check ran, with the nonce when DPoP is on.
    static func denial(_ error: PairingError, policy: DPoPPolicy?) -> BridgeUpgradeDecision {
        var refusal = JSONErrorResponse(status: HTTPResponse.Status(code: error.httpStatus), code: error.code, message: error.message)
        if let nonce = policy?.currentNonce() { DPoPFields.setNonce(nonce, in: &refusal.headers) }
        refusal.headers[.wwwAuthenticate] = "DPoP error=\"\(error.code)\", algs=\"ES256\""
        return .deny(refusal)
    }
}
