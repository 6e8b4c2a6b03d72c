import BridgePairingWire
public import Foundation

/// A phone (or other client) that exchanged a pairing token.
public struct DeviceRecord: Sendable, Equatable, Codable {
    /// Stable identifier (a lowercase UUID); `oa-bridge devices approve|revoke` accept any unique prefix of it.
    public var id: String
    /// The name the device gave when pairing (sanitised), for example "Pixel 8".
    public var name: String
    /// When the device first exchanged its pairing token.
    public var createdAt: Date
    /// When the device last authenticated, if ever.
    public var lastSeenAt: Date?
    /// The source address of the device's last authenticated request, if known.
    public var lastAddress: String?
    /// Whether the device may receive tokens (always true unless approval mode is on and nobody approved it yet).
    public var approved: Bool
    /// When the device was revoked, if it was.
    public var revokedAt: Date?
    /// Whether the device's tokens are bound to its DPoP key (a refresh token it still holds is); nil when unknown
    /// (the record was read without that question, for example by ``TokenStore/device(id:)``).
    public var dpopBound: Bool?

    /// Whether the device is waiting for approval on the desktop.
    public var isPending: Bool { !approved && revokedAt == nil }
    /// Whether the device was revoked.
    public var isRevoked: Bool { revokedAt != nil }

    /// A device record with all fields given.
    public init(
        id: String, name: String, createdAt: Date, lastSeenAt: Date?, lastAddress: String?,
        approved: Bool, revokedAt: Date?, dpopBound: Bool? = nil
    ) {
        self.id = id
        self.name = name
        self.createdAt = createdAt
        self.lastSeenAt = lastSeenAt
        self.lastAddress = lastAddress
        self.approved = approved
        self.revokedAt = revokedAt
        self.dpopBound = dpopBound
    }
}

/// A freshly issued token in clear, to hand to its holder once.
///
/// Its `description` is redacted, so logging it is safe.
public struct IssuedToken: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The plain-text token (`oa_p_…`, `oa_s_…` or `oa_r_…`).
    ///
    /// Never log it.
    public let token: String
    /// Which kind of token this is.
    public let kind: TokenKind
    /// When the token stops being accepted.
    public let expiresAt: Date

    /// A token value with its kind and expiry.
    public init(token: String, kind: TokenKind, expiresAt: Date) {
        self.token = token
        self.kind = kind
        self.expiresAt = expiresAt
    }

    /// `"oa_s_*** (access, expires …)"`: never the secret.
    public var description: String { "\(kind.prefix)*** (\(kind.rawValue), expires \(expiresAt))" }
    /// Same as ``description``.
    public var debugDescription: String { description }
}

/// The access and refresh tokens a device receives from an exchange or a refresh.
public struct DeviceSession: Sendable, Equatable {
    /// The device the tokens belong to.
    public let deviceID: String
    /// Short-lived token for requests and WebSocket upgrades.
    public let accessToken: IssuedToken
    /// Long-lived token to obtain the next pair (single use: every refresh rotates it).
    public let refreshToken: IssuedToken
    /// The RFC 7638 thumbprint of the DPoP key both tokens are bound to; nil when they are Bearer tokens.
    public let dpopThumbprint: String?

    /// A session with both tokens, bound to the DPoP key `dpopThumbprint` names when it is given.
    public init(deviceID: String, accessToken: IssuedToken, refreshToken: IssuedToken, dpopThumbprint: String? = nil) {
        self.deviceID = deviceID
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.dpopThumbprint = dpopThumbprint
    }

    /// The JSON body of a successful `POST /api/auth/exchange` or `/api/auth/refresh`, with `expires_in` counted from `now`.
    public func response(now: Date) -> TokenResponse {
        TokenResponse(
            accessToken: accessToken.token,
            accessTokenExpiresAt: accessToken.expiresAt,
            refreshToken: refreshToken.token,
            refreshTokenExpiresAt: refreshToken.expiresAt,
            tokenType: dpopThumbprint == nil ? "Bearer" : "DPoP",
            expiresIn: max(0, Int(accessToken.expiresAt.timeIntervalSince(now).rounded())),
            deviceID: deviceID
        )
    }
}

/// The result of exchanging a pairing token.
public enum ExchangeOutcome: Sendable, Equatable {
    /// The device is paired and has its tokens.
    case paired(DeviceSession)
    /// Approval mode: the device was registered and waits for `approve`; exchange the same pairing token again later.
    case pending(deviceID: String)
}

/// Who an access token belongs to, as returned by a successful validation.
public struct AuthenticatedDevice: Sendable, Equatable {
    /// The device's ID.
    public let deviceID: String
    /// The device's name.
    public let deviceName: String
    /// When the presented access token expires (close the WebSocket then, code 4001).
    public let accessTokenExpiresAt: Date
    /// The token family the access token belongs to (the tokens descended from one pairing); a WebSocket opened
    /// with it is closed (code 4003) when the family is revoked.
    ///
    /// `nil` only for tokens stored without a family.
    public let familyID: String?
    /// The thumbprint of the DPoP key the token family is bound to; nil when unbound (or with `--dpop off`).
    public var dpopThumbprint: String? = nil
}

/// A revocation that must close WebSockets (code 4003): reported by ``TokenStore/revocationEvents(pollingEvery:)``
/// whether it was made in this process or in another one (`oa-bridge devices revoke`).
public enum TokenRevocation: Sendable, Hashable {
    /// A device and every token it holds were revoked (`devices revoke`, `revoke --all`, logout).
    case device(String)
    /// One token family was revoked: a rotated refresh token was presented again (theft is assumed).
    case family(String)
}

/// What `GET /api/me` (and `_oa/me`) answers: who the caller is, never a secret.
///
/// `{"device_id", "name", "paired_at", "last_seen_at", "access_token_expires_at"}`.
public struct AccountInfo: Sendable, Equatable, Codable {
    /// The device's ID.
    public var deviceID: String
    /// The device's name, as given when pairing (sanitised).
    public var name: String
    /// When the device paired.
    public var pairedAt: Date
    /// When the device last authenticated (this request included), if known.
    public var lastSeenAt: Date?
    /// When the access token used for this request expires.
    public var accessTokenExpiresAt: Date

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id"
        case name
        case pairedAt = "paired_at"
        case lastSeenAt = "last_seen_at"
        case accessTokenExpiresAt = "access_token_expires_at"
    }

    /// The account of `device`, seen through an access token expiring at `accessTokenExpiresAt`.
    public init(device: DeviceRecord, accessTokenExpiresAt: Date) {
        self.deviceID = device.id
        self.name = device.name
        self.pairedAt = device.createdAt
        self.lastSeenAt = device.lastSeenAt
        self.accessTokenExpiresAt = accessTokenExpiresAt
    }
}

/// What `POST /api/logout` (and `_oa/logout`) answers: `{"device_id", "revoked_at"}`.
public struct LogoutResponse: Sendable, Equatable, Codable {
    /// The device that was revoked (the caller).
    public var deviceID: String
    /// When it was revoked.
    public var revokedAt: Date

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id"
        case revokedAt = "revoked_at"
    }

    /// The answer for a revoked `device`.
    public init(device: DeviceRecord) {
        self.deviceID = device.id
        self.revokedAt = device.revokedAt ?? device.lastSeenAt ?? device.createdAt
    }
}

/// Body of `202 Accepted` from an exchange in approval mode: `{"status":"pending","device_id":…,"message":…}`.
public struct PendingResponse: Sendable, Equatable, Codable {
    /// Always `"pending"`.
    public var status: String
    /// The registered device awaiting approval.
    public var deviceID: String
    /// What the user should do.
    public var message: String

    enum CodingKeys: String, CodingKey {
        case status
        case deviceID = "device_id"
        case message
    }

    /// The pending answer for `deviceID`.
    public init(deviceID: String) {
        self.status = "pending"
        self.deviceID = deviceID
        self.message = PairingError.approvalPending(deviceID: deviceID).message
            + " Poll POST /api/auth/exchange with the same pairing_token and this device_id."
    }
}
