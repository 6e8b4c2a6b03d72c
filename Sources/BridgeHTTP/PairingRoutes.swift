public import BridgePairing
import BridgePairingUI
import Foundation
import HTTPTypes
public import Hummingbird
public import Logging
public import NIOCore

/// A request context that knows the peer's address, which the pairing and auth routes need (rate limiting per
/// address, loopback-only pages).
///
/// Use it for the bridge's HTTP router: `Router(context: BridgeRequestContext.self)`.
public struct BridgeRequestContext: RequestContext, TransportAwareRequestContext {
    /// Hummingbird's per-request storage.
    public var coreContext: CoreRequestContextStorage
    /// The peer's address, if the channel has one.
    public let remoteAddress: SocketAddress?
    /// Whether the connection came in over TLS.
    public let isTLS: Bool

    /// Creates the context for a request arriving on `source.channel`.
    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
        self.isTLS = source.isTLS
    }
}

/// HTTP routes for pairing and token exchange (issue 4), open by design (they are how a device gets a token);
/// a `BridgePairing/PairingError` a route throws is answered by `PairingErrorMiddleware`.
///
/// - `POST /api/auth/exchange` `{"pairing_token","device_name"?}` → 200 tokens, 202 pending (approval mode), 401/403/429.
/// - `POST /api/auth/refresh` `{"refresh_token"}` → 200 new tokens (rotation), 401/403/429.
/// - `GET /api/pair/hello`: the bridge's name, session, URLs and full pin (nothing secret), which completes a short link.
/// - `GET /` → 302 to `/app`.
/// - Loopback only (403 otherwise; also refuses non-loopback `Host` headers and foreign `Origin`s):
///   `GET /pair` (HTML, kept current by polling `GET /api/pair/state`), `GET /api/pair/info` (the QR payload's JSON fields plus `url`, the text of the QR code),
///   `GET /api/pair/qr` (PNG of `url`, `?scale=1...16`), `POST /api/pair/refresh` (new pairing code, old revoked;
///   returns the info), `GET /api/pair/devices` (`?all=1` includes revoked ones), `POST /api/pair/approve`,
///   `POST /api/pair/deny` and `POST /api/pair/revoke` `{"device_id"}`.
public enum PairingRoutes {
    /// Adds the routes to `router`.
    ///
    /// Pass `authenticator: nil` with `--auth none`: the `/api/auth/*` routes are then not added, and the pairing
    /// page shows a payload without token.
    public static func register<Context: RemoteAddressRequestContext>(
        on router: Router<Context>,
        authenticator: Authenticator?,
        pairing: PairingSession,
        logger: Logger
    ) {
        if let authenticator {
            router.post("/api/auth/exchange") { request, context -> Response in
                let address = peer(context)
                guard let body: ExchangeRequest = try await decode(request) else { return badRequest("{\"pairing_token\": \"oa_p_…\"}") }
                let outcome: ExchangeOutcome
                do {
                    outcome = try await authenticator.exchange(body, address: address, dpop: try DPoPPresentation.of(request, context: context))
                } catch let error as PairingError {
                    guard case .dpop = error else { throw error }
                    return dpopGrantRefusal(error, route: "exchange", address: address, logger: logger)
                }
                // The code is spent (or claimed by a device awaiting approval): the next phone gets a new one at once,
                // on the terminal and on /pair (issue 29 item 3).
                await pairing.replaceIfUsed()
                switch outcome {
                case .paired(let session):
                    var response = session.response(now: pairing.clock.now())
                    // What a short link leaves out (name, session, fallbacks, the full pin), now that the phone is paired.
                    response.bridge = details(pairing)
                    return json(.ok, response)
                case .pending(let deviceID):
                    return json(.accepted, PendingResponse(deviceID: deviceID))
                }
            }
            router.post("/api/auth/refresh") { request, context -> Response in
                let address = peer(context)
                guard let body: RefreshRequest = try await decode(request) else { return badRequest("{\"refresh_token\": \"oa_r_…\"}") }
                do {
                    let session = try await authenticator.refresh(body, address: address, dpop: try DPoPPresentation.of(request, context: context))
                    return json(.ok, session.response(now: pairing.clock.now()))
                } catch let error as PairingError {
                    guard case .dpop = error else { throw error }
                    return dpopGrantRefusal(error, route: "refresh", address: address, logger: logger)
                }
            }
        }

        // What a native client completes a short link with before it sends the pairing code: open, since it holds
        // nothing secret (the name is the one mDNS announces; the pin, and the tailnet names and addresses of the
        // fallbacks, are in the certificate every TLS handshake shows); the client checks the certificate it got this
        // over against the link's pin prefix.
        router.get("/api/pair/hello") { _, _ -> Response in
            json(.ok, details(pairing))
        }
        // `GET /` is not an empty 404: a browser that opens the bridge's address lands on the web app (issue 29 item 9).
        // A 302 keeps the link's fragment (browsers carry it over a redirect without one), so `/#…` pairs too.
        router.get("/") { _, _ -> Response in
            var headers = privateHeaders()
            headers[.location] = "/app"
            headers[.contentType] = "text/html; charset=utf-8"
            let body = "<!doctype html><title>oa-bridge</title><p>The phone web app is at <a href=\"/app\">/app</a>.</p>\n"
            return Response(status: .found, headers: headers, body: .init(byteBuffer: ByteBuffer(string: body)))
        }

        router.get("/pair") { request, context -> Response in
            if let refusal = localRefusal(request, context) { return refusal }
            let payload = try await pairing.payload()
            let pending = try await pairing.store?.pendingDevices() ?? []
            let devices = try await pairing.store?.listDevices(includeRevoked: false) ?? []
            let html = try PairingPage.html(payload: payload, expiresAt: await pairing.expiresAt(), pending: pending, devices: devices)
            var headers = privateHeaders()
            headers[.contentType] = "text/html; charset=utf-8"
            headers[.contentSecurityPolicy] =
                "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html)))
        }
        // What /pair's script polls to stay current without a reload: the page's sections as HTML (rendered and
        // escaped here, as the page is) and a version that changes with them.
        router.get("/api/pair/state") { request, context -> Response in
            if let refusal = localRefusal(request, context) { return refusal }
            let payload = try await pairing.payload()
            let pending = try await pairing.store?.pendingDevices() ?? []
            let devices = try await pairing.store?.listDevices(includeRevoked: false) ?? []
            let sections = try PairingPage.sections(payload: payload, expiresAt: await pairing.expiresAt(), pending: pending, devices: devices)
            return json(.ok, sections)
        }
        router.get("/api/pair/info") { request, context -> Response in
            if let refusal = localRefusal(request, context) { return refusal }
            return payloadResponse(try await pairing.payload())
        }
        router.get("/api/pair/qr") { request, context -> Response in
            if let refusal = localRefusal(request, context) { return refusal }
            let scale = min(16, max(1, request.uri.queryParameters.get("scale", as: Int.self) ?? 8))
            let payload = try await pairing.payload()
            let png: [UInt8]
            do {
                png = try payload.qrCode().pngData(scale: scale, quietZone: 4)
            } catch {
                return plainError(.internalServerError, "qr_failed", "\(error)")
            }
            var headers = privateHeaders()
            headers[.contentType] = "image/png"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: png)))
        }
        router.post("/api/pair/refresh") { request, context -> Response in
            if let refusal = localRefusal(request, context) { return refusal }
            let payload = try await pairing.rotate()
            logger.notice("pairing code replaced from the pairing page")
            return payloadResponse(payload)
        }
        router.get("/api/pair/devices") { request, context -> Response in
            if let refusal = localRefusal(request, context) { return refusal }
            guard let store = pairing.store else { return json(.ok, [DeviceRecord]()) }
            return json(.ok, try await store.listDevices(includeRevoked: request.uri.queryParameters.get("all") == "1"))
        }
        // deny (a pending device) and revoke (a paired one) are the same act on the store: the device and its tokens go.
        for (path, approve) in [("/api/pair/approve", true), ("/api/pair/deny", false), ("/api/pair/revoke", false)] {
            router.post(RouterPath(path)) { request, context -> Response in
                if let refusal = localRefusal(request, context) { return refusal }
                guard let store = pairing.store else {
                    return plainError(.notFound, "auth_off", "Authentication is off on this bridge: there is nothing to approve.")
                }
                guard let body: DeviceActionRequest = try await decode(request) else { return badRequest("{\"device_id\": \"…\"}") }
                let device = approve ? try await store.approve(deviceID: body.deviceID) : try await store.revoke(deviceID: body.deviceID)
                return json(.ok, device)
            }
        }
    }

    // MARK: - Helpers

    /// The bridge's payload without a pairing code: what a paired phone may know of it.
    static func details(_ pairing: PairingSession) -> PairingPayload {
        let endpoint = pairing.endpoint
        return PairingPayload(
            host: endpoint.host, port: endpoint.port, webSocketPath: endpoint.webSocketPath, session: endpoint.session,
            name: endpoint.name, token: nil, fallbacks: endpoint.fallbacks, pin: endpoint.pin)
    }

    /// The peer's host (no port) as the rate-limit key, `unknown` when the channel has no address.
    static func peer<Context: RemoteAddressRequestContext>(_ context: Context) -> String {
        guard let address = context.remoteAddress?.ipAddress else { return "unknown" }
        return NetworkPolicy.host(fromRemoteAddress: address)
    }

    static func localRefusal<Context: RemoteAddressRequestContext>(_ request: Request, _ context: Context) -> Response? {
        let refusal = NetworkPolicy.localPageRefusal(
            remoteAddress: context.remoteAddress?.ipAddress,
            host: request.head.authority,
            origin: request.headers[.origin],
            method: request.method.rawValue,
            contentType: request.headers[.contentType])
        return refusal.map { plainError(.forbidden, "loopback_only", $0) }
    }

    /// The request body decoded as `T`, or `nil` when it is not valid JSON for `T` (bodies over 16 KiB are refused).
    static func decode<T: Decodable>(_ request: Request) async throws -> T? {
        var request = request
        guard let buffer = try? await request.collectBody(upTo: 16 * 1024) else { return nil }
        return try? PairingJSON.decoder.decode(T.self, from: Data(buffer.readableBytesView))
    }

    static func privateHeaders() -> HTTPFields {
        var headers = HTTPFields()
        headers[.cacheControl] = "no-store"
        for (name, value) in [("X-Content-Type-Options", "nosniff"), ("X-Frame-Options", "DENY"), ("Referrer-Policy", "no-referrer")] {
            // Valid header names: the initializer cannot fail for these.
            if let field = HTTPField.Name(name) { headers[field] = value }
        }
        return headers
    }

    static func json<T: Encodable>(_ status: HTTPResponse.Status, _ value: T) -> Response {
        var headers = privateHeaders()
        headers[.contentType] = "application/json"
        let data = (try? PairingJSON.encoder.encode(value)) ?? Data("{}".utf8)
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// The payload's JSON fields plus `url`, the exact text of the QR code (``PairingInfo``), so `/api/pair/info`'s
    /// `url` equals what `/api/pair/qr` decodes to.
    static func payloadResponse(_ payload: PairingPayload) -> Response {
        var headers = privateHeaders()
        headers[.contentType] = "application/json"
        let body = PairingInfo(payload: payload).jsonString()
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: body)))
    }

    /// The answer to a refused request: ``JSONErrorResponse/init(refusing:)``, written as every refusal is.
    static func failure(_ error: PairingError) -> Response {
        JSONErrorResponse(refusing: error).response
    }

    /// The `400` for a proof an exchange or refresh refused (RFC 9449 §5), logged without the token or proof.
    static func dpopGrantRefusal(_ error: PairingError, route: String, address: String, logger: Logger) -> Response {
        logger.notice("DPoP proof refused", metadata: ["route": "\(route)", "peer": "\(address)", "reason": "\(error.description)"])
        return DPoPAnswers.grantRefusal(error)
    }

    static func plainError(_ status: HTTPResponse.Status, _ code: String, _ message: String) -> Response {
        json(status, AuthErrorBody(error: code, message: message))
    }

    static func badRequest(_ expected: String) -> Response {
        plainError(.badRequest, "bad_request", "The body must be JSON like \(expected) (Content-Type: application/json).")
    }
}

/// Requires a valid access token (`Authorization: Bearer`) on every route it is attached to, and answers 401/403/429
/// with a JSON body otherwise.
///
/// Attach it to a route group, not to the whole router, so it follows the routes and not their spelling:
/// `router.group("api").add(middleware: BearerAuthMiddleware(authenticator: …))`, and register the protected routes on that group
/// (the bridge does this in BridgeServer's `BridgeHTTPRouter`). Paths are normalised before routing (BridgeServer's
/// `PathNormalizingResponder`), so `//api/status` or `/%61pi/status` reach the same route and the same check.
public struct BearerAuthMiddleware<Context: RemoteAddressRequestContext>: RouterMiddleware {
    /// The authenticator checking tokens.
    public let authenticator: Authenticator

    /// A middleware using `authenticator`.
    public init(authenticator: Authenticator) {
        self.authenticator = authenticator
    }

    /// Checks the token (and its DPoP proof), then passes the request on; a route behind it that asks the
    /// authenticator again for the same token (``AccountRoutes``) gets this answer, not a second check of the proof
    /// (whose `jti` is spent).
    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let device: AuthenticatedDevice
        do {
            device = try await authenticator.authenticate(
                authorization: request.headers[.authorization], address: PairingRoutes.peer(context),
                dpop: try DPoPPresentation.of(request, context: context))
        } catch {
            return PairingRoutes.failure(error)
        }
        return try await Authenticator.$authenticatedRequest.withValue(
            .init(authorization: request.headers[.authorization], device: device)
        ) {
            try await next(request, context)
        }
    }
}
