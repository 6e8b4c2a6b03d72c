public import Foundation

/// Fetches this node's HTTPS certificate for its MagicDNS name from tailscaled's LocalAPI
/// (`GET /localapi/v0/cert/<name>?type=pair` over the unix socket, through `LocalAPIRequest`).
///
/// tailscaled answers only when the tailnet has HTTPS certificates enabled and the caller may ask (root, the
/// `--operator` user, or `TS_PERMIT_CERT_UID`); it keeps the certificate cached and renews it itself, so asking
/// again returns the cached one until it is renewed. The answer is the private key in PEM, then the certificate
/// chain in PEM (leaf first).
///
/// (Owned by the TLS work of issue 11; kept in this module because `LocalAPIRequest` is internal to it.)
public struct TailscaleCertificateFetcher: Sendable {
    /// Candidate LocalAPI socket paths, tried in order (the first that exists and answers wins).
    public var socketPaths: [String]
    /// How long one attempt may take.
    ///
    /// The first request for a name can take tens of seconds (tailscaled asks Let's Encrypt for it); later
    /// ones answer from tailscaled's cache.
    public var timeout: Duration

    /// A fetcher for the given sockets (the standard ones by default).
    public init(socketPaths: [String] = TailscaleStatusReader.defaultSocketPaths, timeout: Duration = .seconds(90)) {
        self.socketPaths = socketPaths
        self.timeout = timeout
    }

    /// The key and certificate chain for `name` as tailscaled sends them (PEM: the key, then the chain).
    ///
    /// Throws ``TailscaleError/notInstalled`` when no socket exists, ``TailscaleError/badAnswer(_:)`` when
    /// tailscaled refuses (HTTPS certificates off, not permitted, a name that is not this node's), and
    /// ``TailscaleError/unreachable(_:)`` when it does not answer.
    public func pair(for name: String) async throws(TailscaleError) -> Data {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-")
        guard !name.isEmpty, name.allSatisfy({ allowed.contains($0) }) else {
            throw .badAnswer("'\(name)' is not a DNS name tailscaled can have a certificate for")
        }
        var failures: [TailscaleError] = []
        for path in socketPaths where FileManager.default.fileExists(atPath: path) {
            do {
                return try await LocalAPIRequest.get(path: "/localapi/v0/cert/\(name)?type=pair", socket: path, timeout: timeout)
            } catch {
                failures.append(error)
            }
        }
        guard let last = failures.last else { throw .notInstalled }
        if failures.count == 1 { throw last }
        throw .unreachable(failures.map(\.description).joined(separator: "; "))
    }
}
