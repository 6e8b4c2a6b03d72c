// wss:// for the load generator (issue 11 item 9): the same clients over TLS to the bridge's self-signed identity.

import HummingbirdWSClient
import NIOSSL

/// The TLS configuration for `url`: `nil` for ws:// (plaintext); for wss:// a client that checks no certificate —
/// the bench measures the cost of TLS against the bridge's self-signed identity, it does not decide whom to trust
/// (the pin checks are in the TLS tests).
///
/// TLS 1.3 is negotiated as a phone would.
///
/// `groups: "x25519"` offers only X25519 (as Go 1.19's crypto/tls does) instead of NIOSSL's default, X25519MLKEM768
/// first: the post-quantum hybrid's share of a handshake's CPU and of a connection's memory, measured apart.
func benchTLS(_ url: String, groups: String = "default") -> TLSConfiguration? {
    guard url.hasPrefix("wss://") else { return nil }
    var configuration = TLSConfiguration.makeClientConfiguration()
    configuration.certificateVerification = .none
    if groups == "x25519" { configuration.curves = [.x25519] }
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

/// `bench tlscontext [--count N]`: what making one client `NIOSSLContext` costs, for the configurations a client of
/// the bridge may use: certificate verification off (this bench's clients), and verification on with the system's
/// trust store (`.noHostnameVerification`, what BridgeClient's `WebSocketConnector` sets for its pin check, which
/// replaces the chain check, so the roots it loads are never used), and the same with no roots.
///
/// Microseconds of this process's CPU per context, each made and dropped `count` times.
func runTLSContextCost(_ args: Args) throws {
    let count = min(max(args.int("count", 200), 1), 10_000)
    func cost(_ configure: (inout TLSConfiguration) -> Void) throws -> Double {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configure(&configuration)
        let before = benchCPUSeconds()
        for _ in 0..<count { _ = try NIOSSLContext(configuration: configuration) }
        return (benchCPUSeconds() - before) * 1e6 / Double(count)
    }
    let off = try cost { $0.certificateVerification = .none }
    let systemRoots = try cost { $0.certificateVerification = .noHostnameVerification }
    let noRoots = try cost {
        $0.certificateVerification = .noHostnameVerification
        $0.trustRoots = .certificates([])
    }
    emit(["count": count, "verification_off_us": off, "system_roots_us": systemRoots, "no_roots_us": noRoots])
}
