import Foundation
import Hummingbird

/// `GET /api/status`: who is serving, for clients that hold a token. Behind ``BearerAuthMiddleware``
/// when auth is on, so it is also how a client learns why a WebSocket upgrade was refused: the
/// WebSocket library answers every refused upgrade with a bare 400, while this route answers 401
/// (missing or unknown token) or 403 (expired or revoked) with a JSON body saying which.
enum StatusRoute {
    static func register<Context: RequestContext>(on router: Router<Context>, configuration: BridgeServerConfiguration, started: Date) {
        router.get("/api/status") { _, _ -> Response in
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
