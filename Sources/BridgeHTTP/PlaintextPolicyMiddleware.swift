package import Hummingbird
package import Logging

/// Applies the ``PlaintextPolicy`` to HTTP requests.
///
/// Goes first in the router, ahead of the token checks, so a token sent in clear from another machine is refused
/// without being looked at (nor consumed).
package struct PlaintextPolicyMiddleware<Context: TransportAwareRequestContext>: RouterMiddleware {
    /// The policy applied.
    let policy: PlaintextPolicy
    /// Where refusals are logged.
    let logger: Logger

    /// A middleware applying `policy`, logging refusals to `logger`.
    package init(policy: PlaintextPolicy, logger: Logger) {
        self.policy = policy
        self.logger = logger
    }

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let remote = context.remoteAddress?.ipAddress
        // The target as sent (normalised already when it is a path): an absolute-form target's path is judged too.
        let view = PlaintextPolicy.Request(
            path: request.head.path ?? request.uri.path, query: request.uri.query,
            hasAuthorization: request.headers[.authorization] != nil, isUpgrade: false, remoteAddress: remote, isTLS: context.isTLS)
        guard policy.refuses(view) else { return try await next(request, context) }
        logger.notice("refused a request with a secret in plaintext from another machine", metadata: [
            "path": "\(request.uri.path)", "remote": "\(remote ?? "?")",
        ])
        return policy.refusal().response
    }
}
