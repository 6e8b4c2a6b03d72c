public import BridgeTime
import Crypto
public import Foundation

/// The three kinds of bearer secrets the bridge hands out.
///
/// Every token is an opaque random secret with a readable prefix that says what it is for, so a user
/// (or a secret scanner) can tell a pairing token from a session token at a glance.
public enum TokenKind: String, Sendable, Codable, CaseIterable {
    /// Shown in the QR code; exchanged once for a device session (`oa_p_`, 1 hour by default).
    case pairing
    /// Sent with every request and WebSocket upgrade (`oa_s_`, 15 minutes by default).
    case access
    /// Trades for a new access/refresh pair (`oa_r_`, 30 days by default).
    case refresh

    /// The readable prefix every token of this kind starts with.
    public var prefix: String {
        switch self {
        case .pairing: "oa_p_"
        case .access: "oa_s_"
        case .refresh: "oa_r_"
        }
    }

    /// The kind whose prefix `token` starts with, or `nil` when it has none of ours.
    public init?(token: String) {
        guard let kind = TokenKind.allCases.first(where: { token.hasPrefix($0.prefix) }) else { return nil }
        self = kind
    }
}

/// How long each kind of token stays valid.
public struct TokenLifetimes: Sendable, Equatable {
    /// Lifetime of a pairing token; default one hour.
    public var pairing: TimeInterval
    /// Lifetime of an access token; default 15 minutes.
    public var access: TimeInterval
    /// Lifetime of a refresh token; default 30 days.
    public var refresh: TimeInterval

    /// Lifetimes with the documented defaults (1 h, 15 min, 30 days) unless overridden.
    public init(pairing: TimeInterval = 3600, access: TimeInterval = 15 * 60, refresh: TimeInterval = 30 * 24 * 3600) {
        self.pairing = pairing
        self.access = access
        self.refresh = refresh
    }

    /// The lifetime of tokens of `kind`.
    public func lifetime(of kind: TokenKind) -> TimeInterval {
        switch kind {
        case .pairing: pairing
        case .access: access
        case .refresh: refresh
        }
    }
}

/// The wall time the token store, the rate limiter and the pairing session read: the `BridgeClock/wallTime` of
/// the package's one clock (``init(_:)``), so a test that moves a clock by hand moves token expiry with the bridge's
/// timers instead of sleeping.
public struct TokenClock: Sendable {
    /// Returns the current time.
    public let now: @Sendable () -> Date

    /// The wall time of `clock` (the bridge's `BridgeClock`; in tests, BridgeTestKit's `ManualBridgeClock`).
    public init(_ clock: any BridgeClock) {
        self.now = { clock.wallTime }
    }

    /// The system wall clock (`ContinuousClock`'s wall time).
    public static let system = TokenClock(ContinuousClock())
}

/// Token generation and hashing.
///
/// Plain-text tokens exist only in memory and on the wire; the store keeps hashes.
public enum TokenSecret {
    /// Number of random bytes in every token (256 bits).
    public static let randomByteCount = 32

    /// Length of the base64url body of a token: 32 bytes encode to 43 characters without padding.
    public static let bodyLength = 43

    /// Number of random bytes in a pairing token (128 bits, issue 29 item 2): it travels in the QR code, which must
    /// fit an 80×24 terminal; a single-use code that expires within the hour and is rate-limited per address needs no
    /// more (docs/security.md argues it).
    ///
    /// Pairing tokens of 32 bytes issued before are still accepted.
    public static let pairingRandomByteCount = 16

    /// Length of the base64url body of a 16-byte pairing token: 22 characters without padding.
    public static let pairingBodyLength = 22

    /// A fresh token of `kind`: the prefix followed by 32 bytes (16 for a pairing token) from the system CSPRNG in
    /// base64url without padding.
    public static func generate(_ kind: TokenKind) -> String {
        var rng = SystemRandomNumberGenerator()
        var bytes = [UInt8](repeating: 0, count: kind == .pairing ? pairingRandomByteCount : randomByteCount)
        for index in bytes.indices {
            bytes[index] = rng.next()
        }
        return kind.prefix + base64URL(bytes)
    }

    /// Whether `token` looks like one of ours of `kind`: right prefix, 43 base64url characters (a pairing token: 22,
    /// or 43 for one issued before pairing tokens were shortened).
    ///
    /// Says nothing about validity.
    public static func isWellFormed(_ token: String, kind: TokenKind) -> Bool {
        guard token.hasPrefix(kind.prefix) else { return false }
        let body = token.utf8.dropFirst(kind.prefix.utf8.count)
        guard body.count == bodyLength || (kind == .pairing && body.count == pairingBodyLength) else { return false }
        return body.allSatisfy { byte in
            (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
    }

    /// The SHA-256 digest of the token's UTF-8 bytes: the only form in which a token is ever stored.
    public static func hash(_ token: String) -> Data {
        Data(SHA256.hash(data: Data(token.utf8)))
    }

    /// Compares two byte strings in time that depends only on their lengths, never on where they differ.
    public static func constantTimeEquals(_ lhs: Data, _ rhs: Data) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for (left, right) in zip(lhs, rhs) {
            difference |= left ^ right
        }
        return difference == 0
    }

    /// Compares two tokens in constant time (via their SHA-256 digests, so lengths do not leak either).
    public static func constantTimeEquals(_ lhs: String, _ rhs: String) -> Bool {
        constantTimeEquals(hash(lhs), hash(rhs))
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

/// Helpers that keep secrets out of logs and error messages.
public enum Redaction {
    /// Replaces every `oa_p_…`, `oa_s_…` and `oa_r_…` token in `text` by its prefix and `***`.
    ///
    /// `"Bearer oa_s_AbC…"` becomes `"Bearer oa_s_***"`.
    public static func redactTokens(in text: String) -> String {
        text.replacing(/oa_([psr])_[A-Za-z0-9_\-]+/) { match in "oa_\(match.output.1)_***" }
    }

    /// Redacts the value of every `token=` query parameter (and any of our tokens elsewhere) in a URL or request target.
    ///
    /// `"/ws?token=oa_s_x&a=1"` becomes `"/ws?token=***&a=1"`.
    public static func redactURL(_ url: String) -> String {
        let queryRedacted = url.replacing(/([?&](?:access_)?token=)[^&#]*/.ignoresCase()) { match in
            "\(match.output.1)***"
        }
        return redactTokens(in: queryRedacted)
    }
}

