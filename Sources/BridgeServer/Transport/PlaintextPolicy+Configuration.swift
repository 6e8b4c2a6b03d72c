public import BridgeHTTP

extension PlaintextPolicy {
    /// The policy of a bridge: it applies only when the bridge has a TLS identity (without one there is nothing to
    /// move to), and not with `allowPlaintext` or without tokens.
    public init(for configuration: BridgeServerConfiguration) {
        self.init(
            allowPlaintext: configuration.allowPlaintext || configuration.tlsIdentity == nil,
            tokensInUse: configuration.authenticator != nil)
    }
}
