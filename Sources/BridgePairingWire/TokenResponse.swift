public import Foundation

/// `{"access_token", "access_token_expires_at", "refresh_token", "refresh_token_expires_at", "token_type", "expires_in", "device_id"}`.
///
/// Encode and decode it with ``PairingJSON/encoder`` / ``PairingJSON/decoder`` (ISO 8601 dates).
public struct TokenResponse: Sendable, Equatable, Codable {
    /// The access token (`oa_s_…`).
    public var accessToken: String
    /// When the access token expires.
    public var accessTokenExpiresAt: Date
    /// The refresh token (`oa_r_…`).
    public var refreshToken: String
    /// When the refresh token expires.
    public var refreshTokenExpiresAt: Date
    /// Always `"Bearer"`.
    public var tokenType: String
    /// Seconds until the access token expires.
    public var expiresIn: Int
    /// The paired device's ID.
    public var deviceID: String
    /// The bridge's connection details (its payload without a pairing code: name, session, URLs, fallbacks, full
    /// pin), in the answer to a pairing exchange, so a phone that paired from a short link learns the rest; `nil` in
    /// refresh answers and from older bridges.
    public var bridge: PairingPayload?

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token"
        case accessTokenExpiresAt = "access_token_expires_at"
        case refreshToken = "refresh_token"
        case refreshTokenExpiresAt = "refresh_token_expires_at"
        case tokenType = "token_type"
        case expiresIn = "expires_in"
        case deviceID = "device_id"
        case bridge
    }

    /// A response with all fields given.
    public init(
        accessToken: String, accessTokenExpiresAt: Date, refreshToken: String, refreshTokenExpiresAt: Date,
        tokenType: String, expiresIn: Int, deviceID: String, bridge: PairingPayload? = nil
    ) {
        self.accessToken = accessToken
        self.accessTokenExpiresAt = accessTokenExpiresAt
        self.refreshToken = refreshToken
        self.refreshTokenExpiresAt = refreshTokenExpiresAt
        self.tokenType = tokenType
        self.expiresIn = expiresIn
        self.deviceID = deviceID
        self.bridge = bridge
    }
}
