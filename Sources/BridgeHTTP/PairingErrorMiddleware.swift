import BridgePairing
package import Hummingbird
package import Logging

/// Answers a `BridgePairing/PairingError` thrown by any route with its status and JSON body (`401` with
/// `WWW-Authenticate`, `403`, `429` with `Retry-After`, …; see ``PairingRoutes``), so routes just `try`.
package struct PairingErrorMiddleware<Context: RemoteAddressRequestContext>: RouterMiddleware {
    /// Where refusals are logged.
    let logger: Logger

    /// A middleware logging refusals to `logger`.
    package init(logger: Logger) {
        self.logger = logger
    }

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as PairingError {
            logger.info("request refused", metadata: [
                "path": "\(request.uri.path)", "peer": "\(PairingRoutes.peer(context))", "reason": "\(error.code)",
            ])
            return PairingRoutes.failure(error)
        }
    }
}
