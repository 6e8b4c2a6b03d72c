// wss:// for the load generator (issue 11 item 9): the same clients over TLS to the bridge's self-signed identity.

import HummingbirdWSClient
import NIOSSL

/// The TLS configuration for `url`: `nil` for ws:// (plaintext); for wss:// a client that checks no certificate —
/// the bench measures the cost of TLS against the bridge's self-signed identity, it does not decide whom to trust
/// (the pin checks are in the TLS tests). TLS 1.3 is negotiated as a phone would.
func benchTLS(_ url: String) -> TLSConfiguration? {
    guard url.hasPrefix("wss://") else { return nil }
    var configuration = TLSConfiguration.makeClientConfiguration()
    configuration.certificateVerification = .none
    return configuration
}

/// The client configuration for `url`: 1 MiB frames; for wss:// the SNI name `localhost` (the bridge's certificate
/// names it), since TLS forbids an IP address as SNI and the driver connects to 127.0.0.1.
func benchClientConfiguration(_ url: String) -> WebSocketClientConfiguration {
    WebSocketClientConfiguration(maxFrameSize: 1 << 20, sniHostname: url.hasPrefix("wss://") ? "localhost" : nil)
}

/// A server context from PEM files (the bridge's `tls-cert.pem` and `tls-key.pem`), set up like BridgeTLS's
/// `TLSServerContext`; `nil` when neither is given.
func benchServerTLSContext(certificate: String?, key: String?) throws -> NIOSSLContext? {
    guard let certificate, let key else { return nil }
    var configuration = TLSConfiguration.makeServerConfiguration(
        certificateChain: try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) },
        privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem)))
    configuration.minimumTLSVersion = .tlsv12
    configuration.maximumTLSVersion = .tlsv13
    configuration.cipherSuites = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES256-GCM-SHA384"
    configuration.applicationProtocols = ["http/1.1"]
    return try NIOSSLContext(configuration: configuration)
}
