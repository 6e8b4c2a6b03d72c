import BridgeTLS
import BridgeTailscale

extension TLSServerContext {
    /// Loads `identity`'s certificate and key; with `tailscale`, a client whose ClientHello names the MagicDNS name
    /// (SNI) gets the tailnet's certificate instead (``TailscaleCertificates``), everyone else the identity.
    ///
    /// Throws ``TLSSetupError``.
    init(identity: BridgeIdentity, tailscale: TailscaleCertificates?) throws(TLSSetupError) {
        if let tailscale {
            try self.init(identity: identity, serverNameOverride: { tailscale.override(forServerName: $0) })
        } else {
            try self.init(identity: identity)
        }
    }
}
