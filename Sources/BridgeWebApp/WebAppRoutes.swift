public import HTTPTypes
public import Hummingbird
import NIOCore

/// Serves the phone web app: `GET /app` (the page) and `GET /app/<file>` (its scripts, style sheet, manifest and
/// icons), with strict headers on every answer (``headers(contentType:)``).
///
/// The app needs no token to load: it holds nothing secret, and pairs or authenticates itself over `/api/auth/*` and
/// the WebSocket.
public enum WebAppRoutes {
    /// The Content-Security-Policy of every answer: scripts and styles only from the bridge itself (no inline script or
    /// style), connections only to the bridge (`'self'`, which covers `wss://` to the same host), images also from
    /// `data:` (agent images) and `blob:` (photo previews), no frames, forms or base URL changes.
    public static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; "
        + "manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    /// Adds `GET /app` (also answering `/app/`) and `GET /app/{file}` to `router`.
    public static func register<Context: RequestContext>(on router: Router<Context>) {
        router.get("/app") { _, _ -> Response in response(for: WebAppAssets.index) }
        router.get("/app/{file}") { _, context -> Response in
            response(for: context.parameters.get("file").flatMap { WebAppAssets.all[$0] })
        }
    }

    /// The headers of every answer: `Content-Type`, the CSP, `X-Content-Type-Options: nosniff`,
    /// `Referrer-Policy: no-referrer`, `X-Frame-Options: DENY`, `Cross-Origin-Opener-Policy: same-origin`,
    /// `Cache-Control: no-cache` (revalidate, so a new bridge version is picked up at once).
    public static func headers(contentType: String) -> HTTPFields {
        var headers = HTTPFields()
        headers[.contentType] = contentType
        headers[.contentSecurityPolicy] = contentSecurityPolicy
        headers[.cacheControl] = "no-cache"
        let extra = [
            ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer"), ("X-Frame-Options", "DENY"),
            ("Cross-Origin-Opener-Policy", "same-origin"), ("Permissions-Policy", "geolocation=(), microphone=(), camera=()"),
        ]
        for (name, value) in extra {
            // Valid header names: the initializer cannot fail for these.
            if let field = HTTPField.Name(name) { headers[field] = value }
        }
        return headers
    }

    static func response(for asset: WebAppAssets.Asset?) -> Response {
        guard let asset else {
            return Response(
                status: .notFound, headers: headers(contentType: "text/plain; charset=utf-8"),
                body: .init(byteBuffer: ByteBuffer(string: "not found\n")))
        }
        return Response(status: .ok, headers: headers(contentType: asset.contentType), body: .init(byteBuffer: ByteBuffer(bytes: asset.bytes)))
    }
}
