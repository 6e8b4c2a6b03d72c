import BridgePairing
import Hummingbird
import Prometheus

/// `GET /metrics`: Prometheus text format, on loopback only (403 elsewhere), when a registry is configured.
enum MetricsRoute {
    static func register<Context: RemoteAddressRequestContext>(on router: Router<Context>, registry: PrometheusCollectorRegistry) {
        router.get("/metrics") { _, context -> Response in
            var headers = HTTPFields()
            guard NetworkPolicy.isLoopback(context.remoteAddress?.ipAddress) else {
                headers[.contentType] = "application/json"
                return Response(status: .forbidden, headers: headers, body: .init(byteBuffer: ByteBuffer(string: #"{"error":"forbidden","message":"/metrics answers on loopback only"}"#)))
            }
            var buffer: [UInt8] = []
            registry.emit(into: &buffer)
            headers[.contentType] = "text/plain; version=0.0.4"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: buffer)))
        }
    }
}
