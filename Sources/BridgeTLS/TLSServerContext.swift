import NIOCore
import NIOSSL

/// The server side of the bridge's TLS: its identity loaded into a BoringSSL context (TLS 1.2 minimum, 1.3 preferred,
/// ALPN `http/1.1`), made once per server and shared by every connection.
///
/// With `serverNameOverride`, a client whose ClientHello names a server (SNI) may get another certificate instead (the
/// bridge passes the tailnet's, `TailscaleCertificates` in BridgeTailscale, for the MagicDNS name); everyone else
/// gets the identity.
package struct TLSServerContext: Sendable {
    /// The context every TLS connection's `NIOSSLServerHandler` uses.
    package let sslContext: NIOSSLContext

    /// Loads `identity`'s certificate and key; when given, `serverNameOverride` chooses, from the name a ClientHello
    /// asks for (SNI, `nil` without one), what that handshake uses instead (`.noChanges` keeps the identity).
    /// Throws ``TLSSetupError``.
    package init(
        identity: BridgeIdentity,
        serverNameOverride: (@Sendable (_ serverName: String?) -> NIOSSLContextConfigurationOverride)? = nil
    ) throws(TLSSetupError) {
        do {
            let certificate = try NIOSSLCertificate(bytes: identity.certificateDER, format: .der)
            let key = try NIOSSLPrivateKey(bytes: Array(identity.privateKeyPEM.utf8), format: .pem)
            var configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: [.certificate(certificate)], privateKey: .privateKey(key))
            configuration.minimumTLSVersion = .tlsv12
            configuration.maximumTLSVersion = .tlsv13
            configuration.applicationProtocols = ["http/1.1"]
            if let serverNameOverride {
                // Called once per ClientHello, on the connection's event loop; the choice is a lock and a compare.
                configuration.sslContextCallback = { values, promise in
                    promise.succeed(serverNameOverride(values.serverHostname))
                }
            }
            self.sslContext = try NIOSSLContext(configuration: configuration)
        } catch {
            // The error names BoringSSL's reason; the key itself never appears in it.
            throw TLSSetupError(reason: String(describing: error))
        }
    }
}
