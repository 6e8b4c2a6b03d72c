import Foundation

/// Body of `POST /api/auth/refresh`: `{"refresh_token": "oa_r_…"}`.
public struct RefreshRequest: Sendable, Equatable, Codable {
    /// The current refresh token.
    public var refreshToken: String

    enum CodingKeys: String, CodingKey {
        case refreshToken = "refresh_token"
    }

    /// A request to rotate `refreshToken`.
    public init(refreshToken: String) {
        self.refreshToken = refreshToken
    }
}
