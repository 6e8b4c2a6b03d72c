public import BridgeDPoP
public import BridgeTLS
public import BridgeTime
public import Foundation
import Synchronization

/// The key a token family is bound to (DPoP, RFC 9449, issue 30), as a client uses it: makes a fresh proof for each
/// request with the bridge's last `DPoP-Nonce`, on the client's clock corrected by the bridge's where they differ.
///
/// It travels inside a ``BridgeCredential`` (``TokenVault/credential()`` makes them) to each place that authenticates.
/// A request it sends is tried again at most twice: once with the bridge's nonce when the bridge asks for it
/// (`use_dpop_nonce`), and once with the clock corrected by the bridge's `Date` when the bridge refused the proof
/// (`invalid_dpop_proof`) and its clock is seconds away from this one's (a proof's `iat` outside the bridge's window).
public final class DPoPClientBinding: Sendable {
    /// The key the family is bound to.
    public let signer: DPoPSigner
    /// This client's wall clock (replaced in tests).
    private let now: @Sendable () -> Date
    private let state = Mutex(State())

    private struct State {
        var nonce: String?
        /// The bridge's clock minus this client's, in seconds, once a refusal showed they differ.
        var offset: TimeInterval = 0
    }

    /// The least difference between the bridge's clock and this client's that is corrected: an HTTP date has whole
    /// seconds, and the bridge accepts proofs from a window of a minute or more.
    public static let correctedSkew: TimeInterval = 5

    /// A binding to `signer`'s key, its proofs dated by `clock`'s wall time (the system's unless a test moves one).
    public convenience init(signer: DPoPSigner, clock: any BridgeClock = ContinuousClock()) {
        self.init(signer: signer, wallTime: { clock.wallTime })
    }

    /// A binding to `signer`'s key whose proofs are dated by `wallTime` (a ``BridgeClock``'s, through
    /// ``TokenVault``).
    init(signer: DPoPSigner, wallTime: @escaping @Sendable () -> Date) {
        self.signer = signer
        self.now = wallTime
    }

    /// The bridge's last nonce, if one was seen.
    public var currentNonce: String? { state.withLock { $0.nonce } }

    /// How far the bridge's clock is ahead of this client's (negative: behind), as last corrected; 0 until a refusal
    /// showed a difference.
    public var clockOffset: TimeInterval { state.withLock { $0.offset } }

    /// Keeps `value` (a `DPoP-Nonce` header) as the nonce of the next proofs.
    public func noteNonce(_ value: String?) {
        guard let value, !value.isEmpty else { return }
        state.withLock { $0.nonce = value }
    }

    /// Takes the bridge's clock from `date` (an HTTP `Date` header) when it is at least ``correctedSkew`` away from
    /// this client's corrected clock; returns whether the correction changed (then a refused proof is worth another try).
    @discardableResult
    public func correctClock(byServerDate date: String?) -> Bool {
        guard let date, let server = DPoPClientBinding.httpDate(date) else { return false }
        let local = now()
        return state.withLock { state in
            let offset = server.timeIntervalSince(local)
            guard abs(offset - state.offset) >= DPoPClientBinding.correctedSkew else { return false }
            state.offset = offset
            return true
        }
    }

    /// A proof for `method` on `url` (query and fragment dropped; `ws`/`wss` written as `http`/`https`), with `ath`
    /// for `accessToken` when given, the last nonce, and `iat` on the corrected clock.
    public func proof(method: String, url: String, accessToken: String? = nil) async throws -> String {
        let (nonce, offset) = state.withLock { ($0.nonce, $0.offset) }
        return try await signer.proof(method: method, uri: DPoPClientBinding.httpURI(url), accessToken: accessToken,
                                      nonce: nonce, now: now().addingTimeInterval(offset))
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

    /// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`, RFC 9110 §5.6.7), the form every HTTP `Date` has.
    static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.date(from: text.trimmingCharacters(in: .whitespaces))
    }

    /// The RFC 9449 error an answer carries: `WWW-Authenticate: DPoP error="…"` (a `401`) or the JSON body's
    /// `error` (`400` from the exchange and refresh, or a `401`'s body).
    static func dpopError(_ answer: WebSocketConnector.Answer) -> String? {
        guard answer.status == 400 || answer.status == 401 else { return nil }
        if let challenge = answer.headers["www-authenticate"], let code = authenticateError(challenge) { return code }
        struct ErrorBody: Decodable { var error: String? }
        return (try? JSONDecoder().decode(ErrorBody.self, from: Data(answer.body)))?.error
    }

    /// The `error` parameter of a `DPoP` challenge.
    static func authenticateError(_ challenge: String) -> String? {
        guard let range = challenge.range(of: "error=\"") else { return nil }
        let rest = challenge[range.upperBound...]
        return rest.firstIndex(of: "\"").map { String(rest[..<$0]) }
    }

    /// Whether `answer` asks for a proof with the bridge's nonce: `400 {"error":"use_dpop_nonce"}` (exchange, refresh)
    /// or `401` with `WWW-Authenticate: DPoP error="use_dpop_nonce"`, with a `DPoP-Nonce`.
    static func wantsNonce(_ answer: WebSocketConnector.Answer) -> Bool {
        answer.headers["dpop-nonce"] != nil && dpopError(answer) == "use_dpop_nonce"
    }

    /// Sends one HTTP request with a proof (`DPoP`, and `Authorization: DPoP <accessToken>` when one is given), keeps
    /// the answer's nonce, and sends it again with that nonce when the bridge asks for it, or on the bridge's clock
    /// when it refused the proof and its `Date` is seconds away from this client's.
    public func request(
        _ method: String, url: String, accessToken: String? = nil, using connector: WebSocketConnector,
        pin: CertificatePin? = nil, headers: [String: String] = [:], body: [UInt8] = []
    ) async throws -> WebSocketConnector.Answer {
        var retriedForNonce = false
        var retriedForClock = false
        while true {
            var sent = headers
            sent["DPoP"] = try await proof(method: method, url: url, accessToken: accessToken)
            if let accessToken { sent["Authorization"] = "DPoP \(accessToken)" }
            let reply = try await connector.requestOnce(method, url: url, pin: pin, headers: sent, body: body)
            noteNonce(reply.headers["dpop-nonce"])
            switch DPoPClientBinding.dpopError(reply) {
            case "use_dpop_nonce" where !retriedForNonce && reply.headers["dpop-nonce"] != nil:
                retriedForNonce = true
            case "invalid_dpop_proof" where !retriedForClock && correctClock(byServerDate: reply.headers["date"]):
                retriedForClock = true
            default:
                return reply
            }
        }
    }
}
