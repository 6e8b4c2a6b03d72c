public import BridgeClient
public import BridgeDiscovery

/// A service `discover` found, with the handshake probe's result when it was probed.
public struct ProbedService: Sendable {
    /// The resolved service.
    public var service: ResolvedService
    /// What the probe of its addresses found, or `nil` when it was not probed.
    public var probe: HandshakeProbe.Result?

    /// Creates one.
    public init(service: ResolvedService, probe: HandshakeProbe.Result?) {
        self.service = service
        self.probe = probe
    }
}
