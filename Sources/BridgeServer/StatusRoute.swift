import Foundation
import Hummingbird

/// `GET /api/status`: who is serving, for clients that hold a token. Registered on the protected `/api` group
/// (``BridgeHTTPRouter``), so behind ``BearerAuthMiddleware`` when auth is on: a client can check its token here and
/// get 401 (missing or unknown token) or 403 (expired or revoked) with a JSON body saying which — the same answer a
/// refused WebSocket upgrade carries (``UpgradeRefusals``).
enum StatusRoute {
    static func register<Context: RequestContext>(on group: RouterGroup<Context>, configuration: BridgeServerConfiguration, started: Date) {
        group.get("status") { _, _ -> Response in
            let body: [String: String] = [
                "status": "ok",
                "name": configuration.serverName,
                "version": configuration.serverVersion,
                "auth": configuration.authenticator == nil ? "none" : "token",
                "path": configuration.path,
                "uptime_seconds": String(Int(Date().timeIntervalSince(started))),
            ]
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: (try? encoder.encode(body)) ?? Data())))
        }
    }
}
