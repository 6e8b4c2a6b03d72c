import BridgeRPC

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

    public var description: String {
        switch self {
        case .invalidAddress(let text, let reason):
            return "cannot use '\(text)' as an address: \(reason). Write it as host, host:port or [IPv6]:port."
        case .noEndpointReachable(let attempts):
            return "no address of the bridge answered:\n" + attempts.map { "  - \($0)" }.joined(separator: "\n")
        case .noCandidates(let why):
            return "nothing to connect to: \(why)"
        case .connectionClosed(let why):
            return "the connection closed: \(why)"
        case .rpc(let error):
            return "the bridge answered with an error: \(error.message) (\(error.code))"
        case .unexpectedAnswer(let what):
            return "unexpected answer from the bridge: \(what)"
        case .timedOut(let what):
            return "timed out: \(what)"
        case .unsupportedAddress(let url, let reason):
            return "cannot connect to \(url): \(reason)"
        case .unauthorized(let why):
            return "not authorized: \(why). Pair again with the QR code shown by 'oa-bridge pair' on the desktop."
        }
    }
}
