import BridgeTLS
public import Hummingbird

/// A request context that knows whether its connection came in over TLS (read from `TLSConnections` when the
/// context is made).
public protocol TransportAwareRequestContext: RemoteAddressRequestContext {
    /// Whether the request's connection is TLS.
    var isTLS: Bool { get }
}

extension ApplicationRequestContextSource {
    /// Whether this request's connection came in over TLS.
    package var isTLS: Bool { TLSConnections.shared.isTLS(channel) }
}
