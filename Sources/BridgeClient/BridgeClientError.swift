public import BridgeRPC

/// Errors from connecting to and talking with a bridge, each saying what to try next.
public enum BridgeClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A manual address could not be parsed.
    case invalidAddress(String, reason: String)
    /// Every candidate failed; each attempt says why.
    case noEndpointReachable([String])
    /// There were no candidates at all.
    case noCandidates(String)
    /// The connection closed (or failed) before an answer came.
    case connectionClosed(String)
    /// The bridge answered a request with a JSON-RPC error.
    case rpc(JSONRPCError)
    /// An answer had an unexpected shape.
    case unexpectedAnswer(String)
    /// Waiting took too long.
    case timedOut(String)
    /// The bridge refused the credentials, or they are missing.
    case unauthorized(String)
    /// This client cannot use the address.
    case unsupportedAddress(String, reason: String)
    /// The bridge is there but refused this client with `401`/`403` at `address`: it has to pair (again).
    case needsPairing(address: String, detail: String)
    /// The bridge refused the access token as expired (`403 token_expired`) although this client's copy of its expiry
    /// had not passed: the two clocks are apart. Refreshing the tokens may help (``BridgeConnection`` does it once).
    case tokenExpired(String)
    /// Reconnecting gave up after `attempts` tries; `lastReason` says why the last one failed.
    case gaveUp(attempts: Int, lastReason: String)
    /// After a reconnect the bridge no longer knew session `old` (it restarted, or dropped the session): a new session
    /// `new` was opened in the same directory. What the running prompt would have answered is lost.
    case sessionReplaced(old: String, new: String, reason: String)

    /// Whether reconnecting may help: the link or the bridge was away.
    ///
    /// An answer the bridge gave (an error, a refused token) is final.
    public var isTransient: Bool {
        switch self {
        case .connectionClosed, .noEndpointReachable, .noCandidates, .timedOut: true
        case .invalidAddress, .rpc, .unexpectedAnswer, .unauthorized, .unsupportedAddress, .needsPairing, .tokenExpired, .gaveUp,
            .sessionReplaced:
            false
        }
    }

    /// The description on one line (a list of attempts joined with "; "), for a line per event.
    public var summary: String {
        switch self {
        case .noEndpointReachable(let attempts):
            return "no address answered: " + attempts.joined(separator: "; ")
        default:
            return TerminalText.escapedLine(description)
        }
    }

    /// What went wrong and what to do about it, in one sentence a person can act on.
    public var description: String {
        switch self {
        case .invalidAddress(let text, let reason):
            return "cannot use '\(text)' as an address: \(reason). Write it as host, host:port or [IPv6]:port."
        case .noEndpointReachable(let attempts):
            return "no address of the bridge answered:\n" + attempts.map { "  - \($0)" }.joined(separator: "\n")
        case .noCandidates(let why):
            return "nothing to connect to: \(why)"
        case .connectionClosed(let why):
            return "the connection closed: \(TerminalText.escapedLine(why))"
        case .rpc(let error):
            return "the bridge answered with an error: \(TerminalText.escapedLine(error.message)) (\(error.code))"
        case .unexpectedAnswer(let what):
            return "unexpected answer from the bridge: \(TerminalText.escapedLine(what))"
        case .timedOut(let what):
            return "timed out: \(what)"
        case .unsupportedAddress(let url, let reason):
            return "cannot connect to \(url): \(reason)"
        case .unauthorized(let why):
            return "not authorized: \(why). Pair again with the QR code shown by 'oa-bridge pair' on the desktop."
        case .needsPairing(let address, let detail):
            return "needs pairing: the bridge at \(address) answered, and refused this client (\(detail)). "
                + "Pair this device again with a new code from the desktop ('oa-bridge pair')"
        case .tokenExpired(let why):
            return "the bridge refused the access token as expired (\(why)) before this device expected it to: "
                + "the two clocks are apart; refresh the tokens and connect again"
        case .gaveUp(let attempts, let lastReason):
            return "gave up reconnecting after \(attempts) attempt\(attempts == 1 ? "" : "s"); the last one: \(lastReason). "
                + "Check that the bridge runs ('oa-bridge doctor' on the desktop) and connect again"
        case .sessionReplaced(let old, let new, let reason):
            return "the bridge no longer knows session \(old) (\(reason)); it probably restarted. "
                + "A new session \(new == old ? "(the agent gave it the same id)" : new) is open in the same directory; "
                + "the answer to the prompt that was running is lost"
        }
    }
}
