import BridgeDPoP
import BridgeTLS
import Foundation
import Synchronization

/// A token family bound to this client's DPoP key (RFC 9449, issue 30): makes a fresh proof for each request, with the
/// bridge's last `DPoP-Nonce`, and sends requests with one (tried once more when the bridge asks for its nonce).
///
/// ``TokenVault`` registers its current access token with its binding (``register(_:accessToken:replacing:)``), so the
/// layers that only pass a token along (``WebSocketConnector``, and through it `connect`, `connect --stdio` and probes)
/// send that token as `Authorization: DPoP` with a proof instead of as `Bearer`. A token nobody registered (an unbound
/// family, `--token`) goes as `Bearer`, as before.
public final class DPoPClientBinding: Sendable {
    /// The key the family is bound to.
    public let signer: DPoPSigner
    private let nonce = Mutex<String?>(nil)

    /// A binding to `signer`'s key.
    public init(signer: DPoPSigner) {
        self.signer = signer
    }

    /// The bridge's last nonce, if one was seen.
    public var currentNonce: String? { nonce.withLock { $0 } }

    /// Keeps `value` (a `DPoP-Nonce` header) as the nonce of the next proofs.
    public func noteNonce(_ value: String?) {
        guard let value, !value.isEmpty else { return }
        nonce.withLock { $0 = value }
    }

    /// A proof for `method` on `url` (query and fragment dropped; `ws`/`wss` written as `http`/`https`), with `ath`
    /// for `accessToken` when given, and the last nonce.
    public func proof(method: String, url: String, accessToken: String? = nil) async throws -> String {
        try await signer.proof(method: method, uri: DPoPClientBinding.httpURI(url), accessToken: accessToken, nonce: currentNonce)
    }

    /// `url` with `ws://`/`wss://` written as `http://`/`https://`: a proof names the HTTP request a WebSocket upgrade is.
    static func httpURI(_ url: String) -> String {
        let lower = url.prefix(6).lowercased()
        if lower.hasPrefix("wss://") { return "https://" + url.dropFirst(6) }
        if lower.hasPrefix("ws://") { return "http://" + url.dropFirst(5) }
        return url
    }

    /// The URI a proof for an upgrade to `target` names: `http(s)://host:port/path`, without the query.
    static func uri(of target: WebSocketConnector.Target) -> String {
        let path = target.path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? "/"
        return (target.isSecure ? "https://" : "http://") + target.authority + (path.isEmpty ? "/" : path)
    }

    /// Whether `answer` asks for a proof with the bridge's nonce: `400 {"error":"use_dpop_nonce"}` (exchange, refresh)
    /// or `401` with `WWW-Authenticate: DPoP error="use_dpop_nonce"`, with a `DPoP-Nonce`.
    static func wantsNonce(_ answer: WebSocketConnector.Answer) -> Bool {
        guard answer.headers["dpop-nonce"] != nil else { return false }
        if answer.status == 401, answer.headers["www-authenticate"]?.contains("use_dpop_nonce") == true { return true }
        guard answer.status == 400 || answer.status == 401 else { return false }
        struct ErrorBody: Decodable { var error: String? }
        return (try? JSONDecoder().decode(ErrorBody.self, from: Data(answer.body)))?.error == "use_dpop_nonce"
    }

    /// Sends one HTTP request with a proof (`DPoP`, and `Authorization: DPoP <accessToken>` when one is given), keeps
    /// the answer's nonce, and sends it once more with that nonce when the bridge asks for it.
    public func request(
        _ method: String, url: String, accessToken: String? = nil, using connector: WebSocketConnector,
        pin: CertificatePin? = nil, headers: [String: String] = [:], body: [UInt8] = []
    ) async throws -> WebSocketConnector.Answer {
        var answer: WebSocketConnector.Answer?
        for _ in 0..<2 {
            var sent = headers
            sent["DPoP"] = try await proof(method: method, url: url, accessToken: accessToken)
            if let accessToken { sent["Authorization"] = "DPoP \(accessToken)" }
            let reply = try await connector.requestOnce(method, url: url, pin: pin, headers: sent, body: body)
            noteNonce(reply.headers["dpop-nonce"])
            answer = reply
            if !DPoPClientBinding.wantsNonce(reply) { break }
        }
        guard let answer else { throw WebSocketConnectorError.protocolViolation("no HTTP answer") }
        return answer
    }

    // MARK: - The access tokens bound to a key in this process

    private static let registry = Mutex<[String: DPoPClientBinding]>([:])
    /// The most tokens kept (each vault keeps its current one; old ones are dropped when it refreshes).
    static let registryLimit = 256

    /// Records that `accessToken` is bound to `binding` (and forgets `old`, the token it replaces).
    public static func register(_ binding: DPoPClientBinding, accessToken: String, replacing old: String? = nil) {
        registry.withLock { tokens in
            if let old, old != accessToken { tokens[old] = nil }
            if tokens[accessToken] == nil, tokens.count >= registryLimit, let any = tokens.keys.first { tokens[any] = nil }
            tokens[accessToken] = binding
        }
    }

    /// Forgets `accessToken`.
    public static func unregister(accessToken: String) {
        _ = registry.withLock { $0.removeValue(forKey: accessToken) }
    }

    /// The binding `accessToken` was registered with, if any.
    public static func binding(for accessToken: String) -> DPoPClientBinding? {
        registry.withLock { $0[accessToken] }
    }
}
