import BridgeHTTP
import BridgePairing
import BridgeTime
import BridgeWebApp
import Foundation
import Hummingbird
import Logging

/// The bridge's plain-HTTP routes, with authentication attached to routes rather than to path strings.
///
/// - open: `GET /api/health`, the pairing routes (``PairingRoutes``: `/pair`, `/api/pair/*` loopback only,
///   `/api/auth/*`), `GET /metrics` (loopback only), the phone web app (`/app`, ``WebAppRoutes``);
/// - protected: every route registered on ``protectedAPI`` (`/api/status`, and any later `/api/…` route) requires a
///   token (``BearerAuthMiddleware``) when auth is on;
/// - with `--auth none`, the `/api` group is behind the ``NetworkGate`` instead.
///
/// The responder normalises the path before routing (``PathNormalizingResponder``), so every spelling of a path
/// reaches the route it names, with that route's middleware.
struct BridgeHTTPRouter {
    /// The router; register further open routes here only on purpose.
    let router: Router<BridgeRequestContext>
    /// The `/api` group whose routes need a token (auth on) or an allowed network (`--auth none`).
    let protectedAPI: RouterGroup<BridgeRequestContext>

    init(configuration: BridgeServerConfiguration, gate: NetworkGate?, started: Date, logger: Logger) {
        let router = Router(context: BridgeRequestContext.self)
        // First: a secret sent in clear from another machine is refused before any token check looks at it.
        router.add(middleware: PlaintextPolicyMiddleware(policy: PlaintextPolicy(for: configuration), logger: logger))
        // Then: a state-changing request from a web page of another site or host name is refused (issue 27 item 1).
        router.add(middleware: BrowserOriginMiddleware(policy: BrowserOriginPolicy(for: configuration), logger: logger))
        // DPoP-Nonce on every /api answer (refusals too) while DPoP is on (issue 30).
        if let policy = configuration.authenticator?.activeDPoP { router.add(middleware: DPoPNonceMiddleware(policy: policy)) }
        router.add(middleware: PairingErrorMiddleware(logger: logger))
        let openAPI = router.group("api")
        let protectedAPI = router.group("api")
        if let gate {
            openAPI.add(middleware: NetworkGateMiddleware(gate: gate))
            protectedAPI.add(middleware: NetworkGateMiddleware(gate: gate))
        }
        if let authenticator = configuration.authenticator {
            protectedAPI.add(middleware: BearerAuthMiddleware(authenticator: authenticator))
        }
        if let pairing = configuration.pairing {
            PairingRoutes.register(on: router, authenticator: configuration.authenticator, pairing: pairing, logger: logger)
        }
        if let registry = configuration.metricsRegistry {
            MetricsRoute.register(on: router, registry: registry)
        }
        // The phone web app (open: it holds no secret; it pairs and authenticates itself).
        WebAppRoutes.register(on: router)
        openAPI.get("health") { _, _ -> Response in
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: #"{"status":"ok"}"#)))
        }
        StatusRoute.register(
            on: protectedAPI, name: configuration.serverName, version: configuration.serverVersion,
            tokensInUse: configuration.authenticator != nil, path: configuration.path, acpPath: BridgeServer.acpPath,
            started: started, now: { [clock = configuration.clock] in clock.wallTime })
        if let authenticator = configuration.authenticator { AccountRoutes.register(on: protectedAPI, authenticator: authenticator, logger: logger, prefix: "/api") }
        self.router = router
        self.protectedAPI = protectedAPI
    }

    /// The responder to serve: the router behind path normalisation, with `405` and `Allow` for a routed path's other
    /// methods (``AllowedMethods``).
    func responder() -> PathNormalizingResponder<RouterResponder<BridgeRequestContext>> {
        PathNormalizingResponder(inner: router.buildResponder(), allowed: AllowedMethods(routes: router.routes))
    }
}
