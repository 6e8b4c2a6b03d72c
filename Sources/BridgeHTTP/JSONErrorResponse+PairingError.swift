package import BridgePairing
import HTTPTypes

extension JSONErrorResponse {
    /// The refusal of a request for `error`: its status (`403` for an approval still pending), code and message; for
    /// `BridgePairing/PairingError/rateLimited(retryAfterSeconds:)` `Retry-After` and a `retry_after` member; for a
    /// DPoP error `WWW-Authenticate: DPoP error=…`, for another `401` `WWW-Authenticate: Bearer`; and the private
    /// headers every pairing answer carries (`X-Content-Type-Options`, `X-Frame-Options`, `Referrer-Policy`).
    package init(refusing error: PairingError) {
        self.init(
            status: HTTPResponse.Status(code: error.httpStatus == 202 ? 403 : error.httpStatus), code: error.code, message: error.message,
            headers: PairingRoutes.privateHeaders())
        if case .rateLimited(let seconds) = error {
            headers[.retryAfter] = "\(seconds)"
            extra["retry_after"] = seconds
        }
        if case .dpop = error {
            headers[.wwwAuthenticate] = DPoPAnswers.challenge(error)
        } else if error.httpStatus == 401 {
            headers[.wwwAuthenticate] = "Bearer"
        }
    }
}
