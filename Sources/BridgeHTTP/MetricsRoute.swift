import BridgePairing
package import Hummingbird
package import Prometheus

/// `GET /metrics`: Prometheus text format, when a registry is configured.
///
/// Loopback only, with the pairing pages' checks: the peer must be on loopback, the `Host` header must name
/// loopback (so a web page cannot read it through DNS rebinding), and an `Origin`, if sent, must be that same host.
/// Anything else gets 403 `loopback_only`.
package enum MetricsRoute {
    /// Adds `GET /metrics` for `registry` to `router`.
    package static func register<Context: RemoteAddressRequestContext>(on router: Router<Context>, registry: PrometheusCollectorRegistry) {
        router.get("/metrics") { request, context -> Response in
            if let refusal = refusal(request, context) { return refusal }
            var buffer: [UInt8] = []
            registry.emit(into: &buffer)
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: buffer)))
        }
    }

    /// The 403 for a request from elsewhere, through a non-loopback host name, or from another site's page.
    static func refusal<Context: RemoteAddressRequestContext>(_ request: Request, _ context: Context) -> Response? {
        let host = request.head.authority
        let message: String
        if !NetworkPolicy.isLoopback(context.remoteAddress?.ipAddress) {
            message = "/metrics answers on loopback only; scrape it on the desktop itself."
        } else if !NetworkPolicy.isLoopbackHostHeader(host) {
            message = "/metrics answers only to Host 127.0.0.1, localhost or [::1]; scrape http://127.0.0.1:<port>/metrics."
        } else if !NetworkPolicy.isOriginAllowed(origin: request.headers[.origin], host: host) {
            message = "Requests from web pages of other sites are refused."
        } else {
            return nil
        }
        return PairingRoutes.plainError(.forbidden, "loopback_only", message)
    }
}
