import BridgePairingWire
import Foundation

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

    /// An authenticator over `store` with `limiter` (default 10 failures per minute per address).
    public init(store: TokenStore, limiter: FailedAuthRateLimiter = FailedAuthRateLimiter()) {
        self.store = store
        self.limiter = limiter
    }

    /// The token presented in `Authorization: Bearer <token>`, else in the `token` query parameter, else `nil`.
    public static func presentedToken(authorization: String?, queryToken: String?) -> String? {
        if let header = authorization?.trimmingCharacters(in: .whitespaces), !header.isEmpty {
            let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
            if parts.count == 2, parts[0].lowercased() == "bearer" {
                return parts[1].trimmingCharacters(in: .whitespaces)
            }
            return nil
        }
        if let query = queryToken?.trimmingCharacters(in: .whitespaces), !query.isEmpty { return query }
        return nil
    }

    /// Authenticates a request from `address` carrying `authorization` (the header) or `queryToken` (`?token=`).
    /// - Throws: ``PairingError/rateLimited(retryAfterSeconds:)`` (429), 401 or 403 class errors (see
    ///   ``PairingError/httpStatus``), or ``PairingError/storage(_:)``.
    public func authenticate(
        authorization: String?, queryToken: String? = nil, address: String, touch: Bool = true
    ) async throws(PairingError) -> AuthenticatedDevice {
        let token = Self.presentedToken(authorization: authorization, queryToken: queryToken)
        guard let token else {
            try limiter.check(address)
            throw authorization == nil ? .missingToken : .invalidToken(.access)
        }
        let device = try await counting(address, presenting: token) { () async throws(PairingError) -> AuthenticatedDevice in
            try await store.validateAccess(token, address: address, touch: touch)
        }
        limiter.rememberGood(token: token, until: device.accessTokenExpiresAt)
        return device
    }

    /// `POST /api/auth/exchange`, rate limited per address like ``authenticate(authorization:queryToken:address:touch:)``.
    public func exchange(_ request: ExchangeRequest, address: String) async throws(PairingError) -> ExchangeOutcome {
        let outcome = try await counting(address, presenting: request.pairingToken) { () async throws(PairingError) -> ExchangeOutcome in
            try await store.exchange(
                pairingToken: request.pairingToken, deviceName: request.deviceName, address: address, deviceID: request.deviceID)
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

    /// `POST /api/auth/refresh`, rate limited per address like ``authenticate(authorization:queryToken:address:touch:)``.
    public func refresh(_ request: RefreshRequest, address: String) async throws(PairingError) -> DeviceSession {
        let session = try await counting(address, presenting: request.refreshToken) { () async throws(PairingError) -> DeviceSession in
            try await store.refresh(request.refreshToken, address: address)
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
    ///   - origin: the `Origin` header, if any; `host`: the `Host` header.
    ///   - remoteAddress: the peer, e.g. `192.168.1.20:51234` (the port is ignored for rate limiting); when `nil`,
    ///     the token is still checked but failures are not rate limited.
    public func checkUpgrade(
        path: String, authorization: String?, origin: String?, host: String?, remoteAddress: String?,
        allowedOrigins: Set<String> = []
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
                guard let token = Self.presentedToken(authorization: authorization, queryToken: queryToken) else {
                    throw authorization == nil ? PairingError.missingToken : PairingError.invalidToken(.access)
                }
                return .allow(try await store.validateAccess(token))
            }
            return .allow(try await authenticate(
                authorization: authorization, queryToken: queryToken,
                address: NetworkPolicy.host(fromRemoteAddress: remoteAddress)))
        } catch let error as PairingError {
            return AccessDecision(denying: error)
        } catch {
            return AccessDecision(denying: .storage("\(error)"))
        }
    }
}
