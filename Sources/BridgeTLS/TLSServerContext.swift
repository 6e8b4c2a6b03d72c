import NIOCore
package import NIOSSL

/// The server side of the bridge's TLS: its identity loaded into a BoringSSL context (TLS 1.2 minimum, 1.3 preferred,
/// AEAD cipher suites only, ALPN `h2` and `http/1.1`), made once per server and shared by every connection;
/// ``http1Context`` is the same without `h2`, for connections that must stay HTTP/1.1.
///
/// With `serverNameOverride`, a client whose ClientHello names a server (SNI) may get another certificate instead (the
/// bridge passes the tailnet's, `TailscaleCertificates` in BridgeTailscale, for the MagicDNS name); everyone else
/// gets the identity.
package struct TLSServerContext: Sendable {
    /// TLS 1.2's suites: Mozilla's "intermediate" list for an ECDSA key, AEAD only (AES-GCM and ChaCha20-Poly1305
    /// with ECDHE).
    ///
    /// NIOSSL sets no server preference, so the list itself leaves a client nothing weaker to choose (BoringSSL's
    /// default also offered ECDHE-ECDSA-AES-CBC-SHA, where a Java 8 client landed). TLS 1.3's suites are all AEAD
    /// and not configurable in BoringSSL.
    package static let tls12CipherSuites = [
        "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-ECDSA-AES256-GCM-SHA384",
    ].joined(separator: ":")

    /// The context a TLS connection's `NIOSSLServerHandler` uses: ALPN offers `h2` and `http/1.1`.
    package let sslContext: NIOSSLContext
    /// The same context offering only ALPN `http/1.1`: for a connection whose only use is an HTTP/1.1 answer or a
    /// WebSocket upgrade (one refused at admission, one on probation), which HTTP/2 would not serve.
    package let http1Context: NIOSSLContext

    /// The ALPN protocols ``sslContext`` offers, in the server's order of preference.
    package static let applicationProtocols = ["h2", "http/1.1"]

    /// Loads `identity`'s certificate and key; when given, `serverNameOverride` chooses, from the name a ClientHello
    /// asks for (SNI, `nil` without one), what that handshake uses instead (`.noChanges` keeps the identity).
    ///
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
            configuration.cipherSuites = TLSServerContext.tls12CipherSuites
            configuration.applicationProtocols = ["http/1.1"]
            if let serverNameOverride {
                // Called once per ClientHello, on the connection's event loop; the choice is a lock and a compare.
                configuration.sslContextCallback = { values, promise in
                    promise.succeed(serverNameOverride(values.serverHostname))
                }
            }
            self.http1Context = try NIOSSLContext(configuration: configuration)
            configuration.applicationProtocols = TLSServerContext.applicationProtocols
            self.sslContext = try NIOSSLContext(configuration: configuration)
        } catch {
            // The error names BoringSSL's reason; the key itself never appears in it.
            throw TLSSetupError(reason: String(describing: error))
        }
    }
}
