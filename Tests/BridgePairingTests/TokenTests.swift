import BridgePairing
import Foundation
import Testing

@Suite("Token secrets", .tags(.unit))
struct TokenTests {
    @Test("tokens carry their prefix, 256 random bits (pairing: 128) in base64url, and differ every time", arguments: TokenKind.allCases)
    func generation(kind: TokenKind) {
        let tokens = (0..<200).map { _ in TokenSecret.generate(kind) }
        #expect(Set(tokens).count == tokens.count)
        for token in tokens {
            #expect(token.hasPrefix(kind.prefix))
            // Pairing tokens are 128 bits (22 characters) so the QR code fits an 80x24 terminal (issue 29 item 2).
            #expect(token.count == kind.prefix.count + (kind == .pairing ? 22 : 43))
            #expect(TokenSecret.isWellFormed(token, kind: kind))
            #expect(TokenKind(token: token) == kind)
        }
        // Every base64url character shows up somewhere across 200 tokens: the body is not a constant or hex.
        let alphabet = Set(tokens.flatMap { $0.dropFirst(kind.prefix.count) })
        #expect(alphabet.count > 50)
    }

    @Test("malformed tokens are recognised as such")
    func wellFormedness() {
        let good = TokenSecret.generate(.access)
        #expect(!TokenSecret.isWellFormed(good, kind: .refresh))
        #expect(!TokenSecret.isWellFormed(String(good.dropLast()), kind: .access))
        #expect(!TokenSecret.isWellFormed(good + "A", kind: .access))
        #expect(!TokenSecret.isWellFormed(String(good.dropLast()) + "=", kind: .access))
        #expect(!TokenSecret.isWellFormed("", kind: .access))
        #expect(TokenKind(token: "Bearer x") == nil)
        // A 32-byte pairing token issued before they were shortened is still well formed; 22 characters are not an
        // access token.
        #expect(TokenSecret.isWellFormed("oa_p_" + String(good.dropFirst(5)), kind: .pairing))
        #expect(!TokenSecret.isWellFormed("oa_s_" + String(TokenSecret.generate(.pairing).dropFirst(5)), kind: .access))
    }

    @Test("hashes are SHA-256 of the token text and the comparison is exact")
    func hashing() {
        // SHA-256("abc") is a published test vector.
        let digest = TokenSecret.hash("abc").map { String(format: "%02x", $0) }.joined()
        #expect(digest == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let token = TokenSecret.generate(.refresh)
        #expect(TokenSecret.constantTimeEquals(token, token))
        #expect(!TokenSecret.constantTimeEquals(token, String(token.dropLast()) + "x"))
        #expect(!TokenSecret.constantTimeEquals(Data([1, 2, 3]), Data([1, 2])))
        #expect(TokenSecret.constantTimeEquals(Data([1, 2, 3]), Data([1, 2, 3])))
        #expect(!TokenSecret.constantTimeEquals(Data([1, 2, 3]), Data([1, 2, 4])))
    }

    @Test("redaction removes every token from log lines and URLs")
    func redaction() {
        let access = TokenSecret.generate(.access)
        let refresh = TokenSecret.generate(.refresh)
        let pairing = TokenSecret.generate(.pairing)
        let line = "Authorization: Bearer \(access) then \(refresh), qr \(pairing)."
        let redacted = Redaction.redactTokens(in: line)
        #expect(redacted == "Authorization: Bearer oa_s_*** then oa_r_***, qr oa_p_***.")

        #expect(Redaction.redactURL("/ws?token=\(access)&v=1") == "/ws?token=***&v=1")
        #expect(Redaction.redactURL("/ws?a=1&TOKEN=secret#frag") == "/ws?a=1&TOKEN=***#frag")
        #expect(Redaction.redactURL("/api/status") == "/api/status")
        #expect(!Redaction.redactURL("http://h/x?token=\(access)").contains(access))
    }

    @Test("an issued token never prints its secret")
    func issuedTokenDescription() {
        let token = IssuedToken(token: TokenSecret.generate(.access), kind: .access, expiresAt: Date())
        #expect(!"\(token)".contains(token.token))
        #expect(!String(reflecting: token).contains(token.token))
        #expect("\(token)".hasPrefix("oa_s_***"))
    }

    @Test("lifetimes default to 1 h, 15 min and 30 days")
    func lifetimes() {
        let lifetimes = TokenLifetimes()
        #expect(lifetimes.lifetime(of: .pairing) == 3600)
        #expect(lifetimes.lifetime(of: .access) == 900)
        #expect(lifetimes.lifetime(of: .refresh) == 2_592_000)
    }

    @Test("errors map to 401/403/429 and their messages carry no token")
    func errorMapping() {
        #expect(PairingError.missingToken.httpStatus == 401)
        #expect(PairingError.invalidToken(.access).httpStatus == 401)
        #expect(PairingError.expiredToken(.access).httpStatus == 403)
        #expect(PairingError.revokedToken(.access).httpStatus == 403)
        #expect(PairingError.deviceRevoked(deviceID: "d").httpStatus == 403)
        #expect(PairingError.refreshTokenReused.httpStatus == 403)
        #expect(PairingError.rateLimited(retryAfterSeconds: 5).httpStatus == 429)
        let token = TokenSecret.generate(.access)
        let storage = PairingError.storage(PairingStorageFailure(.write, path: "/state/pairing.sqlite", cause: .other("failed near \(token)")))
        #expect(!storage.message.contains(token))
        #expect(!PairingError.unknownDevice(token).message.contains(token))
        let body = AuthErrorBody(.rateLimited(retryAfterSeconds: 7))
        #expect(body.error == "rate_limited" && body.retryAfter == 7)
    }
}
