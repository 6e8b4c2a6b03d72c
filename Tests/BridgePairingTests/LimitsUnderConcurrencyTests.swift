import BridgePairing
import BridgeTestKit
import Foundation
import Testing

/// Issue 27 item 10: the guess limit holds when the guesses come all at once, and it counts per IPv6 /64 (an IPv6
/// host has 2^64 addresses of its own) and per IPv4 address, an IPv4-mapped IPv6 address counting as its IPv4.
@Suite("Rate limits under concurrency and per network", .tags(.unit))
struct LimitsUnderConcurrencyTests {
    let clock = ManualBridgeClock(wallStart: .pairingTestStart)
    let temporary = TemporaryDirectory()

    @Test("120 simultaneous pairing guesses from one address: exactly the limit (10) reach the store, the rest get 429")
    func simultaneousGuesses() async throws {
        defer { temporary.cleanUp() }
        let store = try TokenStore(directory: temporary.stateDirectory, clock: TokenClock(clock))
        let auth = Authenticator(store: store, limiter: FailedAuthRateLimiter(limit: 10, window: 60, clock: TokenClock(clock)))
        _ = try await store.issuePairingToken()
        let guesses = (0..<120).map { _ in TokenSecret.generate(.pairing) }
        let outcomes = await withTaskGroup(of: PairingError?.self) { group in
            for index in 0..<120 {
                group.addTask {
                    await pairingError {
                        // Well-formed guesses: a malformed one is refused before the store is asked, with no suspension.
                        try await auth.exchange(ExchangeRequest(pairingToken: guesses[index], deviceName: "x"), address: "10.0.0.9")
                    }
                }
            }
            var all: [PairingError?] = []
            for await outcome in group { all.append(outcome) }
            return all
        }
        let evaluated = outcomes.filter { error in
            if case .rateLimited = error { return false }
            return true
        }
        #expect(evaluated.count == 10, "evaluated \(evaluated.count) of 120 guesses against a limit of 10")
        #expect(evaluated.allSatisfy { $0 == .invalidToken(.pairing) })
    }

    @Test("attempts still being evaluated count: with 10 in flight from one address, the 11th is refused before evaluation")
    func inFlightAttemptsCount() throws {
        let limiter = FailedAuthRateLimiter(limit: 10, window: 60, clock: TokenClock(clock))
        var inFlight: [FailedAuthRateLimiter.Attempt?] = []
        for _ in 0..<10 { inFlight.append(try limiter.begin("10.0.0.9", presenting: TokenSecret.generate(.pairing))) }
        #expect(throws: PairingError.self) { try limiter.begin("10.0.0.9", presenting: TokenSecret.generate(.pairing)) }
        #expect(throws: PairingError.self) { try limiter.begin("::ffff:10.0.0.9", presenting: nil) }
        // One of them turns out good: given back, one more may be evaluated.
        limiter.settle(inFlight[0], failed: false)
        let next = try limiter.begin("10.0.0.9", presenting: TokenSecret.generate(.pairing))
        #expect(next != nil)
        #expect(throws: PairingError.self) { try limiter.begin("10.0.0.9", presenting: TokenSecret.generate(.pairing)) }
    }

    @Test("a good token evaluated while guesses run is not counted as a failure")
    func goodTokenIsRefunded() async throws {
        defer { temporary.cleanUp() }
        let store = try TokenStore(directory: temporary.stateDirectory, clock: TokenClock(clock))
        let limiter = FailedAuthRateLimiter(limit: 3, window: 60, clock: TokenClock(clock))
        let auth = Authenticator(store: store, limiter: limiter)
        for _ in 0..<2 {
            let pairing = try await store.issuePairingToken()
            _ = try await auth.exchange(ExchangeRequest(pairingToken: pairing.token, deviceName: "phone"), address: "10.0.0.1")
        }
        #expect(limiter.retryAfter(for: "10.0.0.1") == nil, "successes leave nothing counted")
        for index in 0..<2 {
            _ = await pairingError { try await auth.exchange(ExchangeRequest(pairingToken: "oa_p_bad\(index)"), address: "10.0.0.1") }
        }
        #expect(limiter.retryAfter(for: "10.0.0.1") == nil, "two failures of three allowed")
    }

    @Test("IPv6 addresses count per /64: guesses from many addresses of one /64 share one limit; another /64 is free")
    func perSlash64() async throws {
        let limiter = FailedAuthRateLimiter(limit: 10, window: 60, clock: TokenClock(clock))
        for index in 1...10 {
            limiter.recordFailure(from: "2001:db8:1:2::\(String(index, radix: 16))")
        }
        #expect(limiter.retryAfter(for: "2001:db8:1:2:ffff:ffff:ffff:ffff") != nil)
        #expect(limiter.retryAfter(for: "[2001:0db8:0001:0002::abcd]:443") != nil, "any spelling of the same /64")
        #expect(limiter.retryAfter(for: "2001:db8:1:3::1") == nil)
        #expect(limiter.retryAfter(for: "fe80::1%eth0") == nil)
    }

    @Test("IPv4 counts per address, and an IPv4-mapped IPv6 address as its IPv4 address")
    func ipv4AndMapped() async throws {
        let limiter = FailedAuthRateLimiter(limit: 3, window: 60, clock: TokenClock(clock))
        limiter.recordFailure(from: "::ffff:10.0.0.5")
        limiter.recordFailure(from: "10.0.0.5")
        limiter.recordFailure(from: "[::ffff:10.0.0.5]:5000")
        #expect(limiter.retryAfter(for: "10.0.0.5") != nil)
        #expect(limiter.retryAfter(for: "::ffff:10.0.0.5") != nil)
        #expect(limiter.retryAfter(for: "10.0.0.6") == nil, "IPv4 is per address, not per network")
    }

    @Test("the rate-limit key: IPv4 as it is, mapped IPv6 as IPv4, IPv6 as its /64")
    func keys() {
        #expect(NetworkPolicy.rateLimitKey(fromRemoteAddress: "192.168.1.20:51234") == "192.168.1.20")
        #expect(NetworkPolicy.rateLimitKey(fromRemoteAddress: "::ffff:10.0.0.1") == "10.0.0.1")
        #expect(NetworkPolicy.rateLimitKey(fromRemoteAddress: "2001:db8:1:2:3:4:5:6") == "2001:db8:1:2::/64")
        #expect(NetworkPolicy.rateLimitKey(fromRemoteAddress: "[2001:DB8:0:0::1]:9099") == "2001:db8:0:0::/64")
        #expect(NetworkPolicy.rateLimitKey(fromRemoteAddress: "::1") == "0:0:0:0::/64")
        #expect(NetworkPolicy.rateLimitKey(fromRemoteAddress: "unknown") == "unknown")
    }
}
