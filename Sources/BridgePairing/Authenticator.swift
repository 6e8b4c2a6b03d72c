import BridgeDPoP
import BridgePairingWire
import Foundation
public import Logging

/// What the server calls on every protected request and WebSocket upgrade: rate limit, token extraction, validation.
///
/// Failed attempts with an unknown or malformed token (401 `invalid_token`) count against the source address; after
/// ``FailedAuthRateLimiter/limit`` of them in the window every attempt from that address with a token the bridge does
/// not know gets 429 until it cools down. Tokens the bridge issued or accepted before are still checked, so the paired
/// device is not locked out by someone guessing from the same address (see ``FailedAuthRateLimiter``).
/// Expired or revoked tokens (403) do not count: they come from real clients that should refresh or re-pair.
public struct Authenticator: Sendable {
    /// The token store that validates tokens.
    public let store: TokenStore
    /// The per-address limiter of failed attempts.
    public let limiter: FailedAuthRateLimiter
    /// How DPoP proofs are required and checked; nil: not at all (as ``DPoPMode/off``).
    public let dpop: DPoPPolicy?
    /// Where refused DPoP proofs are logged (never the token or proof).
    let logger: Logger

    /// An authenticator over `store` with `limiter` (default 10 failures per minute per address) and `dpop`.
    public init(
        store: TokenStore, limiter: FailedAuthRateLimiter = FailedAuthRateLimiter(), dpop: DPoPPolicy? = nil,
        logger: Logger = Logger(label: "oa-bridge.dpop")
    ) {
        self.store = store
        self.limiter = limiter
        self.dpop = dpop
        self.logger = logger
    }

    /// A request whose token (and proof) was already checked, for example by the `/api` group's middleware: a route behind it
    /// that authenticates the same `Authorization` again gets `device` (the proof's `jti` is spent and must not be
    /// checked twice).
    public struct AuthenticatedRequest: Sendable {
        /// The `Authorization` header that was checked.
        public var authorization: String?
        /// Its device.
        public var device: AuthenticatedDevice

        /// The check of `authorization`, which named `device`.
        public init(authorization: String?, device: AuthenticatedDevice) {
            self.authorization = authorization
            self.device = device
        }
    }

    /// The request being served whose token was already checked, if any.
    @TaskLocal public static var authenticatedRequest: AuthenticatedRequest?

    /// The policy when DPoP is on (`optional` or `required`), else nil.
    public var activeDPoP: DPoPPolicy? {
        guard let dpop, dpop.isActive else { return nil }
        return dpop
    }

    /// The token presented in `Authorization: Bearer <token>` (or `DPoP <token>`), else in the `token` query
    /// parameter, else `nil`.
    public static func presentedToken(authorization: String?, queryToken: String?) -> String? {
        presented(authorization: authorization, queryToken: queryToken)?.token
    }

    /// The token and whether it came as `Authorization: Bearer`.
    static func presented(authorization: String?, queryToken: String?) -> (token: String, asBearer: Bool)? {
        if let header = authorization?.trimmingCharacters(in: .whitespaces), !header.isEmpty {
            let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
            if parts.count == 2, ["bearer", "dpop"].contains(parts[0].lowercased()) {
                return (parts[1].trimmingCharacters(in: .whitespaces), parts[0].lowercased() == "bearer")
            }
            return nil
        }
        if let query = queryToken?.trimmingCharacters(in: .whitespaces), !query.isEmpty { return (query, false) }
        return nil
    }

    /// Authenticates a request from `address` carrying `authorization` (the header) or `queryToken` (`?token=`), and,
    /// when DPoP is on, the proof in `presentation` (RFC 9449 §7): a bound token needs a valid proof by its key,
    /// made for this request, with `ath` hashing the token, presented as `Authorization: DPoP`.
    /// - Throws: ``PairingError/rateLimited(retryAfterSeconds:)`` (429), 401 or 403 class errors (see
    ///   ``PairingError/httpStatus``), ``PairingError/dpop(_:)`` (401), or ``PairingError/storage(_:)``.
    public func authenticate(
        authorization: String?, queryToken: String? = nil, address: String, touch: Bool = true,
        dpop presentation: DPoPPresentation? = nil
    ) async throws(PairingError) -> AuthenticatedDevice {
        if let done = Self.authenticatedRequest, let authorization, done.authorization == authorization { return done.device }
        guard let (token, asBearer) = Self.presented(authorization: authorization, queryToken: queryToken) else {
            try limiter.check(address)
            throw authorization == nil ? .missingToken : .invalidToken(.access)
        }
        let device = try await counting(address, presenting: token) { () async throws(PairingError) -> AuthenticatedDevice in
            try await validate(token, asBearer: asBearer, address: address, touch: touch, dpop: presentation)
        }
        limiter.rememberGood(token: token, until: device.accessTokenExpiresAt)
        return device
    }

    /// The token's device, with its DPoP proof checked (step 1 before the store is asked, the binding inside the
    /// store's check, step 2 after), without rate limiting.
    func validate(
        _ token: String, asBearer: Bool, address: String?, touch: Bool, dpop presentation: DPoPPresentation?
    ) async throws(PairingError) -> AuthenticatedDevice {
        guard let policy = activeDPoP else { return try await store.validateAccess(token, address: address, touch: touch) }
        do {
            var verified: DPoPVerifiedProof?
            if let proof = presentation?.proof, let presentation {
                verified = try await policy.check(
                    proof, for: DPoPRequest(method: presentation.method, uri: presentation.uri, accessToken: token))
            }
            let use = DPoPUse(mode: policy.mode, thumbprint: verified?.thumbprint, asBearer: asBearer)
            let device = try await store.validateAccess(token, address: address, touch: touch, dpop: use)
            if let verified, let bound = device.dpopThumbprint { try policy.accept(verified, boundTo: bound) }
            return device
        } catch {
            if case .dpop = error { logRefusal(error, of: "token use", uri: presentation?.uri, address: address) }
            throw error
        }
    }

    /// Logs a refused proof: the reason and where it came from, never the token or the proof.
    func logRefusal(_ error: PairingError, of what: String, uri: String?, address: String?) {
        logger.notice("DPoP proof refused", metadata: [
            "for": "\(what)", "uri": "\(uri ?? "-")", "peer": "\(address ?? "-")", "reason": "\(error.description)",
        ])
    }

    /// Step 1 of the proof that comes with an exchange or refresh (no `ath`: no access token is presented), or nil
    /// when there is none or DPoP is off; ``DPoPError/proofRequired`` when `--dpop required` and there is none.
    private func proofForGrant(_ presentation: DPoPPresentation?) async throws(PairingError) -> DPoPVerifiedProof? {
        guard let policy = activeDPoP else { return nil }
        guard let proof = presentation?.proof, let presentation else {
            if policy.mode == .required { throw .dpop(.proofRequired) }
            return nil
        }
        let verified = try await policy.check(proof, for: DPoPRequest(method: presentation.method, uri: presentation.uri))
        // The jti is spent before the store changes anything: a replayed proof must not pair or rotate.
        try policy.accept(verified, boundTo: nil)
        return verified
    }

    /// `POST /api/auth/exchange`, rate limited per address like ``authenticate(authorization:queryToken:address:touch:dpop:)``;
    /// with a DPoP proof (`presentation`) the new token family is bound to its key.
    public func exchange(
        _ request: ExchangeRequest, address: String, dpop presentation: DPoPPresentation? = nil
    ) async throws(PairingError) -> ExchangeOutcome {
        let verified = try await proofForGrant(presentation)
        let outcome = try await counting(address, presenting: request.pairingToken) { () async throws(PairingError) -> ExchangeOutcome in
            try await store.exchange(
                pairingToken: request.pairingToken, deviceName: request.deviceName, address: address, deviceID: request.deviceID,
                dpopThumbprint: verified?.thumbprint)
        }
        switch outcome {
        case .paired(let session):
            remember(session)
        case .pending:
            // Approval mode: the same pairing token comes back once the desktop approves; an hour covers the default
            // lifetime of a pairing token, and the store still refuses it once it expires.
            limiter.rememberGood(token: request.pairingToken, for: 3600)
        }
        return outcome
    }

    /// `POST /api/auth/refresh`, rate limited per address like ``authenticate(authorization:queryToken:address:touch:dpop:)``;
    /// a bound family's refresh needs a proof by its key (`presentation`).
    public func refresh(
        _ request: RefreshRequest, address: String, dpop presentation: DPoPPresentation? = nil
    ) async throws(PairingError) -> DeviceSession {
        let verified: DPoPVerifiedProof?
        do {
            verified = try await proofForGrant(presentation)
        } catch {
            // A rotated refresh token presented again is theft whatever its proof: the family is revoked (issue 30).
            if case .dpop = error, try await store.revokeFamilyIfReused(request.refreshToken, address: address) {
                throw .refreshTokenReused
            }
            throw error
        }
        let mode = activeDPoP?.mode ?? .off
        let session = try await counting(address, presenting: request.refreshToken) { () async throws(PairingError) -> DeviceSession in
            try await store.refresh(request.refreshToken, address: address, dpopMode: mode, dpopThumbprint: verified?.thumbprint)
        }
        remember(session)
        return session
    }

    /// Remembers a session's new tokens as good, so its device is not refused for others' failures at its address.
    private func remember(_ session: DeviceSession) {
        limiter.rememberGood(token: session.accessToken.token, until: session.accessToken.expiresAt)
        limiter.rememberGood(token: session.refreshToken.token, until: session.refreshToken.expiresAt)
    }

    /// Evaluates `token` from `address` with `body`, counted by the limiter from before the evaluation starts (see
    /// ``FailedAuthRateLimiter/begin(_:presenting:)``): an unknown or malformed token (`invalid_token`) stays counted
    /// as a failure, anything else is given back.
    private func counting<T>(
        _ address: String, presenting token: String, _ body: () async throws(PairingError) -> T
    ) async throws(PairingError) -> T {
        let attempt = try limiter.begin(address, presenting: token)
        do {
            let value = try await body()
            limiter.settle(attempt, failed: false)
            return value
        } catch {
            if case .invalidToken = error {
                // A known-good token was not counted when it started; one the store no longer knows counts now.
                if attempt == nil { limiter.recordFailure(from: address) }
                limiter.settle(attempt, failed: true)
            } else {
                limiter.settle(attempt, failed: false)
            }
            throw error
        }
    }
}

/// The answer to a WebSocket upgrade or protected HTTP request, in framework-neutral terms.
public enum AccessDecision: Sendable, Equatable {
    /// Let it through; the device is authenticated (close its socket at `accessTokenExpiresAt`, code 4001).
    case allow(AuthenticatedDevice)
    /// Refuse with this status (401, 403, 429, 500), JSON body and, for 429, a `Retry-After` value in seconds.
    case deny(status: Int, body: AuthErrorBody, retryAfterSeconds: Int?)

    /// The denial for `error`.
    public init(denying error: PairingError) {
        if case .rateLimited(let seconds) = error {
            self = .deny(status: error.httpStatus, body: AuthErrorBody(error), retryAfterSeconds: seconds)
        } else {
            self = .deny(status: error.httpStatus == 202 ? 403 : error.httpStatus, body: AuthErrorBody(error), retryAfterSeconds: nil)
        }
    }
}

extension Authenticator {
    /// Everything the WebSocket upgrade needs: Origin check (403 `forbidden_origin`), then rate limit and token from
    /// `Authorization: Bearer` or `?token=` in `path`.
    /// - Parameters:
    ///   - path: the request target with its query (`/?token=…`).
    ///   - authorization: the `Authorization` header, if any.
    ///   - origin: the `Origin` header, if any.
    ///   - host: the `Host` header, if any.
    ///   - remoteAddress: the peer, for example `192.168.1.20:51234` (the port is ignored for rate limiting); when `nil`,
    ///     the token is still checked but failures are not rate limited.
    ///   - allowedOrigins: other `Origin` values let through besides the bridge's own pages (exact `scheme://host[:port]`).
    ///   - presentation: the request's method and target URI and its DPoP proof (the `DPoP` header, or `?dpop=` from a
    ///     browser), checked as ``authenticate(authorization:queryToken:address:touch:dpop:)`` does.
    /// - Returns: ``AccessDecision/allow(_:)`` with the device, or the refusal to answer with.
    public func checkUpgrade(
        path: String, authorization: String?, origin: String?, host: String?, remoteAddress: String?,
        allowedOrigins: Set<String> = [], dpop presentation: DPoPPresentation? = nil
    ) async -> AccessDecision {
        guard NetworkPolicy.isOriginAllowed(origin: origin, host: host, allowedOrigins: allowedOrigins) else {
            return .deny(
                status: 403,
                body: AuthErrorBody(
                    error: "forbidden_origin",
                    message: "WebSocket connections from web pages of other sites are refused. Connect from the oa-bridge app or a native client."),
                retryAfterSeconds: nil)
        }
        let queryToken = NetworkPolicy.queryToken(fromPath: path)
        do {
            guard let remoteAddress else {
                // Without a peer address there is no fair bucket to count in (one shared bucket would let anyone lock
                // everyone out), so the token is checked without rate limiting. Pass the address to get limiting.
                guard let (token, asBearer) = Self.presented(authorization: authorization, queryToken: queryToken) else {
                    throw authorization == nil ? PairingError.missingToken : PairingError.invalidToken(.access)
                }
                return .allow(try await validate(token, asBearer: asBearer, address: nil, touch: true, dpop: presentation))
            }
            return .allow(try await authenticate(
                authorization: authorization, queryToken: queryToken,
                address: NetworkPolicy.host(fromRemoteAddress: remoteAddress), dpop: presentation))
        } catch let error as PairingError {
            return AccessDecision(denying: error)
        } catch {
            return AccessDecision(denying: .storage(PairingStorageFailure(.read, path: TokenStore.databaseFileName, error: error)))
        }
    }
}
