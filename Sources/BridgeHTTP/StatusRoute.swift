package import Foundation
package import Hummingbird

/// `GET /api/status`: who is serving, for clients that hold a token.
///
/// Registered on the protected `/api` group (BridgeServer's `BridgeHTTPRouter`), so behind ``BearerAuthMiddleware`` when auth is
/// on: a client can check its token here and get 401 (missing or unknown token) or 403 (expired or revoked) with a JSON body
/// saying which — the same answer a refused WebSocket upgrade carries (BridgeServer's `UpgradeRefusals`).
package enum StatusRoute {
    /// Adds `GET status` to `group`: the bridge's `name` and `version`, whether it uses tokens (`tokensInUse`), its
    /// WebSocket `path`, the endpoint of ACP's remote-transport RFD (`acp`: WebSocket and Streamable HTTP), and the
    /// seconds from `started` to `now()` (the bridge's clock).
    package static func register<Context: RequestContext>(
        on group: RouterGroup<Context>, name: String, version: String, tokensInUse: Bool, path: String, acpPath: String,
        started: Date, now: @escaping @Sendable () -> Date
    ) {
        group.get("status") { _, _ -> Response in
            let body: [String: String] = [
                "status": "ok",
                "name": name,
                "version": version,
                "auth": tokensInUse ? "token" : "none",
                "path": path,
                "acp": acpPath,
                "uptime_seconds": String(Int(now().timeIntervalSince(started))),
            ]
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: (try? encoder.encode(body)) ?? Data())))
        }
    }
}
