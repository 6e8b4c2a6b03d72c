/// How a probe of one address ended, as `discover --probe --json` writes it.
public enum ProbeOutcome: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// The bridge answered `initialize`.
    case answered
    /// The bridge is there and wants pairing: the upgrade got `401` or `403`.
    case needsPairing = "needs_pairing"
    /// Nothing listens on that address and port.
    case refused
    /// No answer in time.
    case timeout
    /// TLS did not match: another key than the pinned one, or one side expected TLS and the other did not.
    case tlsMismatch = "tls_mismatch"
    /// Anything else (no route, not a bridge, a broken answer).
    case error

    /// Better outcomes first: a summary keeps the best one of a service's addresses.
    public var rank: Int {
        switch self {
        case .answered: 0
        case .needsPairing: 1
        case .tlsMismatch: 2
        case .error: 3
        case .timeout: 4
        case .refused: 5
        }
    }

    /// The outcome a connector error stands for.
    public init(_ error: WebSocketConnectorError) {
        switch error {
        case .refused: self = .refused
        case .timedOut: self = .timeout
        case .pinMismatch, .notTLS, .tlsRequired, .certificateRejected: self = .tlsMismatch
        case .upgradeRefused(let status, _, _) where status == 401 || status == 403: self = .needsPairing
        case .upgradeRefused, .unreachable, .invalidURL, .protocolViolation: self = .error
        }
    }

    /// The outcome's name as reports print it (its raw value).
    public var description: String { rawValue }
}
