public import BridgeTLS

/// What an ``ACPRelay`` reports beside the ACP stream (`connect --stdio` prints these on stderr, never on stdout).
public enum ACPRelayEvent: Sendable {
    /// A link to the bridge answered `initialize`: the endpoint, the certificate's pin (over TLS), and whether it is
    /// the first link (the editor's own `initialize`) or a reconnect.
    case connected(endpoint: BridgeEndpoint, pin: CertificatePin?, first: Bool)
    /// The link was lost; the relay reconnects.
    case lost(reason: String)
    /// Attempt `attempt` (of at most `of`) to reconnect starts after `delay`.
    case retrying(reason: String, delay: Duration, attempt: Int, of: Int?)
    /// After a reconnect, the sessions the editor opened are attached again (`resumed` of them by the bridge's resume,
    /// `reloaded` by `session/load` because the bridge had forgotten them).
    case resumed(resumed: Int, reloaded: Int)
    /// A session could not be attached again (`reason` as the bridge said it); requests for it get the bridge's errors.
    case sessionLost(sessionID: String, reason: String)
    /// The bridge no longer holds every update the editor missed while the link was down (`detail` says which).
    case gap(sessionID: String, detail: String)
    /// Reconnecting gave up; waiting messages were answered with an error. The next message from the editor starts
    /// over.
    case gaveUp(reason: String)
}
