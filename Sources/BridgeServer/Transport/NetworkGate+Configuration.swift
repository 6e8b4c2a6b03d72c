import BridgeHTTP

extension NetworkGate {
    /// The gate for `configuration`: `nil` with auth on.
    ///
    /// Throws ``BridgeServerError/badNetwork(_:)`` for a network that is not CIDR.
    init?(for configuration: BridgeServerConfiguration) throws(BridgeServerError) {
        guard configuration.authenticator == nil else { return nil }
        var networks: [IPNetwork] = []
        for text in configuration.allowedNetworks {
            guard let network = IPNetwork(text) else { throw BridgeServerError.badNetwork(text) }
            networks.append(network)
        }
        self.init(allowed: networks)
    }
}
