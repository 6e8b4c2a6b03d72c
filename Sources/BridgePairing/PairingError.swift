public import BridgeDPoP
public import Foundation

/// Everything that can go wrong while pairing or authenticating.
///
/// Each case maps to an HTTP status (``httpStatus``), a stable machine-readable ``code`` for JSON bodies, and a
/// ``message`` a person can act on. No case ever carries a token, so any of them is safe to log or send.
public enum PairingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No token was presented at all (401).
    case missingToken
    /// The token is malformed, of the wrong kind, or unknown to this desktop (401).
    case invalidToken(TokenKind)
    /// The token was valid once but has expired (403).
    case expiredToken(TokenKind)
    /// The token was revoked, for example by `oa-bridge devices revoke` or a newer pairing code (403).
    case revokedToken(TokenKind)
    /// The pairing token was already exchanged by a device (403).
    case pairingTokenAlreadyUsed
    /// A refresh token that had already been rotated was presented again; the device's whole token family was revoked (403).
    case refreshTokenReused
    /// The device was revoked on the desktop (403).
    case deviceRevoked(deviceID: String)
    /// The device is waiting for approval on the desktop (answer 202 to an exchange, 403 elsewhere).
    case approvalPending(deviceID: String)
    /// No device matches the given ID or ID prefix (404).
    case unknownDevice(String)
    /// The device ID prefix matches more than one device (409).
    case ambiguousDevice(String)
    /// Too many failed attempts from this address; retry after this many seconds (429).
    case rateLimited(retryAfterSeconds: Int)
    /// The state directory or database could not be created, opened, read or written (500): what was being done, on
    /// which path, and the cause (errno, or SQLite's result code as GRDB gives it).
    case storage(PairingStorageFailure)
    /// A DPoP proof was missing or refused (RFC 9449): 401 on a token's use, 400 on the exchange and refresh.
    case dpop(DPoPError)

    /// The HTTP status code this error should produce.
    public var httpStatus: Int {
        switch self {
        case .missingToken, .invalidToken, .dpop: 401
        case .expiredToken, .revokedToken, .pairingTokenAlreadyUsed, .refreshTokenReused, .deviceRevoked: 403
        case .approvalPending: 202
        case .unknownDevice: 404
        case .ambiguousDevice: 409
        case .rateLimited: 429
        case .storage: 500
        }
    }

    /// A stable identifier for JSON error bodies and WebSocket close reasons.
    public var code: String {
        switch self {
        case .missingToken: "missing_token"
        case .invalidToken: "invalid_token"
        case .expiredToken: "token_expired"
        case .revokedToken: "token_revoked"
        case .pairingTokenAlreadyUsed: "pairing_token_used"
        case .refreshTokenReused: "refresh_token_reused"
        case .deviceRevoked: "device_revoked"
        case .approvalPending: "approval_pending"
        case .unknownDevice: "unknown_device"
        case .ambiguousDevice: "ambiguous_device"
        case .rateLimited: "rate_limited"
        case .storage: "storage_error"
        case .dpop(let error): error.code
        }
    }

    /// A sentence a user can act on.
    ///
    /// Never contains a token.
    public var message: String {
        switch self {
        case .missingToken:
            return "No access token was sent. Send 'Authorization: Bearer <access token>' (or ?token= on the WebSocket URL); pair the phone first if it has none."
        case .invalidToken(let kind):
            return "The \(kind.rawValue) token is not valid for this desktop. \(Self.remedy(for: kind))"
        case .expiredToken(let kind):
            return "The \(kind.rawValue) token has expired. \(Self.remedy(for: kind))"
        case .revokedToken(let kind):
            return "The \(kind.rawValue) token was revoked. \(Self.remedy(for: kind))"
        case .pairingTokenAlreadyUsed:
            return "This pairing code was already used by a device. Run 'oa-bridge pair' on the desktop for a new code and scan it again."
        case .refreshTokenReused:
            return "This refresh token had already been used, so all of this device's tokens were revoked as a precaution. Pair the phone again ('oa-bridge pair' on the desktop)."
        case .deviceRevoked(let deviceID):
            return "Device \(deviceID) was revoked on the desktop. Pair it again ('oa-bridge pair' on the desktop)."
        case .approvalPending(let deviceID):
            return "Device \(deviceID) is waiting for approval. On the desktop run 'oa-bridge devices approve \(deviceID)' or approve it on the pairing page, then try again."
        case .unknownDevice(let id):
            return "No paired device has the ID '\(Redaction.redactTokens(in: id))'. Run 'oa-bridge devices list' to see the IDs."
        case .ambiguousDevice(let id):
            return "More than one device ID starts with '\(Redaction.redactTokens(in: id))'. Type more characters of the ID ('oa-bridge devices list')."
        case .rateLimited(let seconds):
            return "Too many failed sign-in attempts from this address. Try again in \(seconds) s."
        case .storage(let failure):
            return "The pairing database failed: \(Redaction.redactTokens(in: failure.description)). "
                + "Check that the state directory is writable by this user and its disk is not full."
        case .dpop(let error):
            return error.message.prefix(1).uppercased() + error.message.dropFirst() + "."
        }
    }

    /// `"<code>: <message>"`.
    public var description: String { "\(code): \(message)" }

    private static func remedy(for kind: TokenKind) -> String {
        switch kind {
        case .pairing: "Run 'oa-bridge pair' on the desktop for a new pairing code and scan it again."
        case .access: "Get a new one with POST /api/auth/refresh, or pair the phone again."
        case .refresh: "Pair the phone again ('oa-bridge pair' on the desktop)."
        }
    }
}

extension PairingError: LocalizedError {
    /// Same as ``message``.
    public var errorDescription: String? { message }
}
