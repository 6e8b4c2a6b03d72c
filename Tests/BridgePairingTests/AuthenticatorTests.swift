import BridgePairing
import BridgeTestKit
import Foundation
import Testing

@Suite("Authenticator", .tags(.unit))
struct AuthenticatorTests {
    let clock = ManualBridgeClock(wallStart: .pairingTestStart)
    let temporary = TemporaryDirectory()

    @Test("Bearer header first, then ?token=; other schemes are not tokens")
    func presentedToken() {
        #expect(Authenticator.presentedToken(authorization: "Bearer abc", queryToken: "q") == "abc")
        #expect(Authenticator.presentedToken(authorization: "bearer   abc ", queryToken: nil) == "abc")
        #expect(Authenticator.presentedToken(authorization: nil, queryToken: "q") == "q")
        #expect(Authenticator.presentedToken(authorization: "Basic dXNlcg==", queryToken: "q") == nil)
        #expect(Authenticator.presentedToken(authorization: nil, queryToken: " ") == nil)
    }

    @Test("a phone goes from pairing token to an authenticated, refreshed session")
    func happyPath() async throws {
        defer { temporary.cleanUp() }
        let store = try TokenStore(directory: temporary.stateDirectory, clock: TokenClock(clock))
        let auth = Authenticator(store: store, limiter: FailedAuthRateLimiter(clock: TokenClock(clock)))
        let pairing = try await store.issuePairingToken()
        guard case .paired(let session) = try await auth.exchange(ExchangeRequest(pairingToken: pairing.token, deviceName: "Phone A"), address: "10.0.0.7") else {
            Issue.record("expected tokens")
            return
        }
        let viaHeader = try await auth.authenticate(authorization: "Bearer \(session.accessToken.token)", address: "10.0.0.7")
        let viaQuery = try await auth.authenticate(authorization: nil, queryToken: session.accessToken.token, address: "10.0.0.7")
        #expect(viaHeader.deviceID == session.deviceID && viaQuery.deviceID == session.deviceID)
        clock.advance(by: .seconds(901))
        let expired = await pairingError { try await auth.authenticate(authorization: "Bearer \(session.accessToken.token)", address: "10.0.0.7") }
        #expect(expired == .expiredToken(.access))
        let renewed = try await auth.refresh(RefreshRequest(refreshToken: session.refreshToken.token), address: "10.0.0.7")
        _ = try await auth.authenticate(authorization: "Bearer \(renewed.accessToken.token)", address: "10.0.0.7")
        #expect(await pairingError { try await auth.authenticate(authorization: nil, address: "10.0.0.7") } == .missingToken)
    }

    @Test("ten bad tokens from one address get it 429 for guesses, but the paired device's token keeps working there")
    func rateLimitsGuessingWithoutLockout() async throws {
        defer { temporary.cleanUp() }
        let store = try TokenStore(directory: temporary.stateDirectory, clock: TokenClock(clock))
        let auth = Authenticator(store: store, limiter: FailedAuthRateLimiter(limit: 10, window: 60, clock: TokenClock(clock)))
        let pairing = try await store.issuePairingToken()
        guard case .paired(let session) = try await auth.exchange(ExchangeRequest(pairingToken: pairing.token), address: "10.0.0.7") else {
            Issue.record("expected tokens")
            return
        }
        let good = "Bearer \(session.accessToken.token)"
        for _ in 0..<10 {
            let error = await pairingError { try await auth.authenticate(authorization: "Bearer \(TokenSecret.generate(.access))", address: "203.0.113.9") }
            #expect(error == .invalidToken(.access))
        }
        // Guessing is slowed: the next guess, a missing token and a guessed pairing token all get 429.
        let guess = await pairingError { try await auth.authenticate(authorization: "Bearer \(TokenSecret.generate(.access))", address: "203.0.113.9") }
        #expect(guess == .rateLimited(retryAfterSeconds: 60))
        #expect(guess?.httpStatus == 429)
        #expect(await pairingError { try await auth.authenticate(authorization: nil, address: "203.0.113.9") } == .rateLimited(retryAfterSeconds: 60))
        #expect(await pairingError { try await auth.exchange(ExchangeRequest(pairingToken: TokenSecret.generate(.pairing)), address: "203.0.113.9") } == .rateLimited(retryAfterSeconds: 60))
        // The device's own tokens (issued by this bridge) still work from that address: no lockout.
        #expect(try await auth.authenticate(authorization: good, address: "203.0.113.9").deviceID == session.deviceID)
        let renewed = try await auth.refresh(RefreshRequest(refreshToken: session.refreshToken.token), address: "203.0.113.9")
        #expect(try await auth.authenticate(authorization: "Bearer \(renewed.accessToken.token)", address: "203.0.113.9").deviceID == session.deviceID)
        // A known token that was revoked (rotated away by the refresh) is still refused by the store, and not as 429.
        #expect(await pairingError { try await auth.authenticate(authorization: good, address: "203.0.113.9") } == .revokedToken(.access))
        _ = try await auth.authenticate(authorization: "Bearer \(renewed.accessToken.token)", address: "10.0.0.7")
    }

    @Test("a token the store accepted once is known; one it never saw is not, after a restart of the limiter")
    func acceptedTokensBecomeKnown() async throws {
        defer { temporary.cleanUp() }
        let store = try TokenStore(directory: temporary.stateDirectory, clock: TokenClock(clock))
        let auth = Authenticator(store: store, limiter: FailedAuthRateLimiter(limit: 3, window: 60, clock: TokenClock(clock)))
        let pairing = try await store.issuePairingToken()
        guard case .paired(let session) = try await store.exchange(pairingToken: pairing.token) else {
            Issue.record("expected tokens")
            return
        }
        let good = "Bearer \(session.accessToken.token)"
        for _ in 0..<3 {
            _ = await pairingError { try await auth.authenticate(authorization: "Bearer \(TokenSecret.generate(.access))", address: "203.0.113.9") }
        }
        // Issued outside this authenticator and never accepted by it: unknown, so refused like a guess.
        #expect(await pairingError { try await auth.authenticate(authorization: good, address: "203.0.113.9") } == .rateLimited(retryAfterSeconds: 60))
        // Accepted once from elsewhere: known from then on.
        _ = try await auth.authenticate(authorization: good, address: "10.0.0.7")
        #expect(try await auth.authenticate(authorization: good, address: "203.0.113.9").deviceID == session.deviceID)
    }

    @Test("expired tokens do not count toward the limit")
    func expiredTokensDoNotCount() async throws {
        defer { temporary.cleanUp() }
        let store = try TokenStore(directory: temporary.stateDirectory, clock: TokenClock(clock))
        let auth = Authenticator(store: store, limiter: FailedAuthRateLimiter(limit: 10, window: 60, clock: TokenClock(clock)))
        let pairing = try await store.issuePairingToken()
        guard case .paired(let session) = try await store.exchange(pairingToken: pairing.token) else {
            Issue.record("expected tokens")
            return
        }
        let good = "Bearer \(session.accessToken.token)"
        // Expired tokens do not count toward the limit.
        clock.advance(by: .seconds(61))
        clock.advance(by: .seconds(900))
        for _ in 0..<20 {
            #expect(await pairingError { try await auth.authenticate(authorization: good, address: "10.0.0.7") } == .expiredToken(.access))
        }
        _ = try await auth.refresh(RefreshRequest(refreshToken: session.refreshToken.token), address: "10.0.0.7")
    }
}
