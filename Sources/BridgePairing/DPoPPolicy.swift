public import BridgeDPoP
import Foundation

/// How the bridge applies DPoP (RFC 9449): the ``DPoPMode`` and the verifier (nonces, replay cache) shared by every
/// route and upgrade, so a proof's `jti` is spent once across all of them.
public struct DPoPPolicy: Sendable {
    /// `--dpop`.
    public let mode: DPoPMode
    /// Checks proofs; holds the nonce key and the replay cache.
    public let verifier: DPoPVerifier
    /// The time proofs are checked at.
    public let clock: TokenClock

    /// A policy in `mode`, with nonces rotated every 5 minutes (the last 2 periods current) and proofs up to 2 minutes
    /// old (1 minute of a device's clock running ahead).
    public init(mode: DPoPMode, verifier: DPoPVerifier = DPoPVerifier(), clock: TokenClock = .system) {
        self.mode = mode
        self.verifier = verifier
        self.clock = clock
    }

    /// Whether the bridge looks at DPoP at all (not ``DPoPMode/off``).
    public var isActive: Bool { mode != .off }

    /// The nonce to send in `DPoP-Nonce` now; nil with ``DPoPMode/off`` or when the verifier asks for no nonce.
    public func currentNonce() -> String? {
        guard isActive, let nonces = verifier.nonces else { return nil }
        return nonces.current(at: clock.now())
    }

    /// Step 1 of a proof's check (see `DPoPVerifier/check(_:for:now:)`), its error wrapped as ``PairingError/dpop(_:)``.
    public func check(_ proof: String, for request: DPoPRequest) async throws(PairingError) -> DPoPVerifiedProof {
        do {
            return try await verifier.check(proof, for: request, now: clock.now())
        } catch {
            throw .dpop(error)
        }
    }

    /// Step 2 (see `DPoPVerifier/accept(_:boundTo:now:)`): the key is `thumbprint`'s and the `jti` is new.
    public func accept(_ proof: DPoPVerifiedProof, boundTo thumbprint: String?) throws(PairingError) {
        do {
            try verifier.accept(proof, boundTo: thumbprint, now: clock.now())
        } catch {
            throw .dpop(error)
        }
    }
}

/// What a request offers for DPoP: its method and target URI (scheme from the connection, authority from `Host`, the
/// path; the query is ignored) and the proof from the `DPoP` header (or a browser's `?dpop=` on the upgrade).
public struct DPoPPresentation: Sendable, Equatable {
    /// The HTTP method (`GET` for a WebSocket upgrade).
    public var method: String
    /// `http(s)://host[:port]/path`.
    public var uri: String
    /// The proof, if the request carries one.
    public var proof: String?

    /// A request's DPoP parts; an empty `proof` counts as none.
    public init(method: String, uri: String, proof: String?) {
        self.method = method
        self.uri = uri
        let trimmed = proof?.trimmingCharacters(in: .whitespaces)
        self.proof = (trimmed?.isEmpty ?? true) ? nil : trimmed
    }

    /// The target URI of a request that came in over TLS or not, to `authority` (the `Host`), for `path` (its query
    /// and fragment are dropped); `localhost` when the request named no authority.
    public static func targetURI(isTLS: Bool, authority: String?, path: String) -> String {
        var bare = Substring(path)
        if let cut = bare.firstIndex(where: { $0 == "?" || $0 == "#" }) { bare = bare[..<cut] }
        if bare.isEmpty { bare = "/" }
        let host = (authority?.isEmpty ?? true) ? "localhost" : authority ?? "localhost"
        return "\(isTLS ? "https" : "http")://\(host)\(bare)"
    }
}

/// The binding rules (RFC 9449 §7) for a token family bound to `bound` (a JWK thumbprint; nil when unbound),
/// presented with a proof by `presented` (nil when none) in `mode`.
enum DPoPBinding {
    /// For a token use (`Authorization`): `asBearer` when it came as `Authorization: Bearer`.
    static func checkUse(mode: DPoPMode, bound: String?, presented: String?, asBearer: Bool) -> DPoPError? {
        guard mode != .off else { return nil }
        guard let bound else { return mode == .required ? .unboundToken : nil }
        if asBearer { return .boundTokenAsBearer }
        guard let presented else { return .missingProof }
        return presented == bound ? nil : .keyMismatch
    }

    /// For a refresh: the proof's key must be the family's.
    static func checkRefresh(mode: DPoPMode, bound: String?, presented: String?) -> DPoPError? {
        guard mode != .off else { return nil }
        guard let bound else { return mode == .required ? .unboundToken : nil }
        guard let presented else { return .missingProof }
        return presented == bound ? nil : .keyMismatch
    }
}

/// What ``TokenStore/validateAccess(_:address:touch:dpop:)`` checks the token family's binding against.
public struct DPoPUse: Sendable, Equatable {
    /// `--dpop`.
    public var mode: DPoPMode
    /// The thumbprint of the key whose proof came with the token (already checked), nil when none came.
    public var thumbprint: String?
    /// Whether the token came as `Authorization: Bearer`.
    public var asBearer: Bool

    /// A use in `mode` with a proof by `thumbprint`'s key (nil: no proof), the token sent as Bearer when `asBearer`.
    public init(mode: DPoPMode, thumbprint: String?, asBearer: Bool) {
        self.mode = mode
        self.thumbprint = thumbprint
        self.asBearer = asBearer
    }
}
