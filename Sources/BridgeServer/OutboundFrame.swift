/// What a connection's writer sends next.
enum OutboundFrame: Sendable {
    /// A text frame.
    case text(String)
    /// A close frame with a reason; nothing is sent after it.
    case close(CloseKind, String)

    /// The close codes the bridge uses.
    enum CloseKind: Sendable {
        /// 1008: the client broke a rule (e.g. did not initialize in time).
        case policyViolation
        /// 1009: a message was too large.
        case messageTooBig
    }
}
