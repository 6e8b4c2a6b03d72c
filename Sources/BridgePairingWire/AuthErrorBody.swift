import Foundation

/// JSON error body for 401/403/429 answers: `{"error": "<code>", "message": "…"}`.
public struct AuthErrorBody: Sendable, Equatable, Codable {
    /// A stable machine-readable code, for example `invalid_token`.
    public var error: String
    /// What the user can do about it.
    public var message: String
    /// Seconds to wait, for 429 answers.
    public var retryAfter: Int?

    enum CodingKeys: String, CodingKey {
        case error
        case message
        case retryAfter = "retry_after"
    }

    /// A body with a code and message (`PairingError` supplies them on the desktop side).
    public init(error: String, message: String, retryAfter: Int? = nil) {
        self.error = error
        self.message = message
        self.retryAfter = retryAfter
    }
}
