/// `--dpop`: whether tokens are bound to a device's key (RFC 9449).
public enum DPoPMode: String, CaseIterable, Sendable {
    /// Every exchange must carry a proof and every token must be bound; devices paired before DPoP must pair again.
    case required
    /// New pairings with a proof are bound and must prove possession from then on; unbound (older) devices keep
    /// working with Bearer tokens until they pair again. The default.
    case optional
    /// DPoP headers are ignored: exchanges are unbound and bound tokens are taken as Bearer tokens.
    case off
}
