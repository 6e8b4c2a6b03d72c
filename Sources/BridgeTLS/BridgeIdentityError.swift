/// Why the bridge's TLS identity cannot be created, read or rotated.
public enum BridgeIdentityError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A file in the state directory cannot be read or written (path, reason).
    case storage(path: String, reason: String)
    /// The stored key does not parse as a P-256 private key in PEM.
    case unreadableKey(path: String)
    /// The certificate cannot be made (reason from swift-certificates).
    case cannotIssue(reason: String)

    /// A message a user can act on.
    public var description: String {
        switch self {
        case .storage(let path, let reason):
            "cannot use \(path) for the bridge's TLS identity (\(reason)); check the state directory's owner and permissions"
        case .unreadableKey(let path):
            "the bridge's TLS key \(path) is damaged; run `oa-bridge identity rotate` to make a new one (phones must pair again)"
        case .cannotIssue(let reason):
            "cannot make the bridge's TLS certificate (\(reason))"
        }
    }
}
