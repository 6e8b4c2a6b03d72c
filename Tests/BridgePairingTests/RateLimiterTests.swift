import BridgePairing
import BridgeTestKit
import Foundation
import Testing

@Suite("Failed-auth rate limiter", .tags(.unit))
struct RateLimiterTests {
    @Test("10 failures a minute per address, then Retry-After counts down, other addresses unaffected")
    func slidingWindow() throws {
        let clock = ManualBridgeClock(wallStart: .pairingTestStart)
        let limiter = FailedAuthRateLimiter(limit: 10, window: 60, clock: TokenClock(clock))
        for attempt in 0..<10 {
            #expect(limiter.retryAfter(for: "10.0.0.5") == nil, "attempt \(attempt) should be allowed")
            limiter.recordFailure(from: "10.0.0.5")
            clock.advance(by: .seconds(1))
        }
        // Ten failures at t = 0...9; now t = 10: the first expires at t = 60.
        #expect(limiter.retryAfter(for: "10.0.0.5") == 50)
        #expect(throws: PairingError.rateLimited(retryAfterSeconds: 50)) { try limiter.check("10.0.0.5") }
        #expect(limiter.retryAfter(for: "10.0.0.6") == nil)

        clock.advance(by: .milliseconds(49_500))
        #expect(limiter.retryAfter(for: "10.0.0.5") == 1)
        clock.advance(by: .milliseconds(500))
        #expect(limiter.retryAfter(for: "10.0.0.5") == nil)
        // One more failure right away: ten in the window again (t = 1...9 and now).
        limiter.recordFailure(from: "10.0.0.5")
        #expect(limiter.retryAfter(for: "10.0.0.5") == 1)

        limiter.reset("10.0.0.5")
        #expect(limiter.retryAfter(for: "10.0.0.5") == nil)
    }

    @Test("the number of tracked addresses stays bounded")
    func bounded() {
        let clock = ManualBridgeClock(wallStart: .pairingTestStart)
        let limiter = FailedAuthRateLimiter(limit: 1, window: 60, maximumTrackedAddresses: 100, clock: TokenClock(clock))
        for index in 0..<1000 {
            limiter.recordFailure(from: "192.0.2.\(index)")
            clock.advance(by: .milliseconds(1))
        }
        // The most recent addresses are still limited; the oldest were forgotten.
        #expect(limiter.retryAfter(for: "192.0.2.999") != nil)
        #expect(limiter.retryAfter(for: "192.0.2.0") == nil)
        let limited = (0..<1000).filter { limiter.retryAfter(for: "192.0.2.\($0)") != nil }.count
        #expect(limited <= 100)
    }

    @Test("a limited address still passes known-good tokens until they expire; unknown ones get 429")
    func knownGoodTokens() throws {
        let clock = ManualBridgeClock(wallStart: .pairingTestStart)
        let limiter = FailedAuthRateLimiter(limit: 2, window: 60, clock: TokenClock(clock))
        let known = TokenSecret.generate(.access)
        limiter.rememberGood(token: known, for: 30)
        limiter.recordFailure(from: "10.0.0.5")
        limiter.recordFailure(from: "10.0.0.5")
        try limiter.check("10.0.0.5", presenting: known)
        #expect(throws: PairingError.rateLimited(retryAfterSeconds: 60)) { try limiter.check("10.0.0.5", presenting: TokenSecret.generate(.access)) }
        #expect(throws: PairingError.rateLimited(retryAfterSeconds: 60)) { try limiter.check("10.0.0.5", presenting: nil) }
        clock.advance(by: .seconds(30))
        #expect(!limiter.isKnownGood(known))
        #expect(throws: PairingError.rateLimited(retryAfterSeconds: 30)) { try limiter.check("10.0.0.5", presenting: known) }
    }

    @Test("the number of known-good digests stays bounded, the soonest-expiring forgotten first")
    func knownTokensBounded() {
        let clock = ManualBridgeClock(wallStart: .pairingTestStart)
        let limiter = FailedAuthRateLimiter(maximumKnownTokens: 10, clock: TokenClock(clock))
        let tokens = (0..<50).map { _ in TokenSecret.generate(.access) }
        for (index, token) in tokens.enumerated() { limiter.rememberGood(token: token, for: TimeInterval(100 + index)) }
        #expect(tokens.filter(limiter.isKnownGood).count == 10)
        #expect(limiter.isKnownGood(tokens[49]) && !limiter.isKnownGood(tokens[0]))
    }
}
