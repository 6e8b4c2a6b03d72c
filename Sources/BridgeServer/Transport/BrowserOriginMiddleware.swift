import BridgeHTTP
import BridgePairing
import Hummingbird
import Logging

/// Applies the ``BrowserOriginPolicy`` to every state-changing HTTP request (any method but `GET`, `HEAD`,
/// `OPTIONS`): a browser page of another site, or of a host name that is not the bridge's, gets 403 before any
/// route (pairing exchange, refresh, logout, the pairing page's approvals) sees the request.
struct BrowserOriginMiddleware<Context: TransportAwareRequestContext>: RouterMiddleware {
    let policy: BrowserOriginPolicy
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard !NetworkPolicy.isSafeMethod(request.method.rawValue),
              let refusal = policy.refusal(origin: request.headers[.origin], host: request.head.authority, isTLS: context.isTLS)
        else { return try await next(request, context) }
        logger.notice("refused a request from a web page of another site or host name", metadata: [
            "error": "\(refusal.code)", "method": "\(request.method.rawValue)", "path": "\(request.uri.path)",
            "origin": "\(request.headers[.origin] ?? "-")", "remote": "\(context.remoteAddress?.ipAddress ?? "?")",
        ])
        return refusal.response
    }
}
