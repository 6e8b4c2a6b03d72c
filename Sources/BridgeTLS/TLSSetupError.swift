/// The bridge's TLS identity cannot be loaded into the TLS library.
public struct TLSSetupError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What the TLS library said (never the key).
    public let reason: String

    /// A message a user can act on.
    public var description: String {
        "cannot load the bridge's TLS identity (\(reason)); `oa-bridge identity rotate` makes a new one (phones must pair again)"
    }
}
