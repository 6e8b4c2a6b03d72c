public import Foundation
import Synchronization

/// Counts failed authentication attempts per source address in a sliding window and says when to refuse, without
/// locking out a device that holds a good token.
///
/// The rule:
/// - every attempt with an unknown or malformed token (401 `invalid_token`) counts as a failure of its address;
/// - after ``limit`` failures within ``window`` an address gets 429 for every token this limiter does not know;
/// - a token the bridge has issued or accepted (see ``rememberGood(token:until:)``) is still checked from a limited
///   address — it is the legitimate device's, and the store still rejects it if it expired or was revoked.
///
/// Guessing stays at ``limit`` tries per window per address (a guess is never a known token), while a phone behind the
/// same address (a shared NAT, a hostile neighbour spoofing nothing but its own guesses) keeps working. Known tokens are
/// remembered by their SHA-256 digest only, in memory; after a restart a device's token becomes known again on its
/// first success from an address that is not limited.
///
/// Addresses are counted by ``NetworkPolicy/rateLimitKey(fromRemoteAddress:)``: an IPv4 address on its own (an
/// IPv4-mapped IPv6 address as its IPv4 address), an IPv6 address by its /64 (one host usually has the whole /64).
///
/// Under concurrency the limit still holds: an attempt is counted when it starts (``begin(_:presenting:)``), before
/// its token is looked at, and given back when it succeeds (``settle(_:failed:)``), so that 120 guesses sent at once
/// from one address are 10 evaluated and 110 refused, not 120 evaluated against a count that has not moved yet.
///
/// Memory is bounded: at most ``maximumTrackedAddresses`` addresses and ``maximumKnownTokens`` digests; the stalest
/// addresses and the soonest-expiring digests are forgotten first.
public final class FailedAuthRateLimiter: Sendable {
    /// Failures allowed per address within ``window``.
    public let limit: Int
    /// Length of the sliding window in seconds.
    public let window: TimeInterval
    /// Upper bound on the number of addresses remembered at once.
    public let maximumTrackedAddresses: Int
    /// Upper bound on the number of known-good token digests remembered at once.
    public let maximumKnownTokens: Int

    private let clock: TokenClock
    private let state = Mutex(State())

    /// What the limiter remembers.
    private struct State {
        /// Failure times per address, oldest first.
        var failures: [String: [Date]] = [:]
        /// SHA-256 digests of tokens known to be good, with the time they expire.
        var knownTokens: [Data: Date] = [:]
    }

    /// A limiter allowing `limit` failures per `window` seconds per address (default 10 per minute).
    public init(
        limit: Int = 10, window: TimeInterval = 60, maximumTrackedAddresses: Int = 10_000, maximumKnownTokens: Int = 10_000,
        clock: TokenClock = .system
    ) {
        self.limit = max(1, limit)
        self.window = max(1, window)
        self.maximumTrackedAddresses = max(1, maximumTrackedAddresses)
        self.maximumKnownTokens = max(1, maximumKnownTokens)
        self.clock = clock
    }

    /// `nil` when `address` may try again now; otherwise the whole seconds to wait (for a `Retry-After` header).
    public func retryAfter(for address: String) -> Int? {
        let now = clock.now()
        let key = Self.key(address)
        return state.withLock { state in
            wait(Self.prune(&state, key, now: now, window: window), now: now)
        }
    }

    /// The seconds to wait with `recent` failures (oldest first) in the window, or `nil` below the limit.
    private func wait(_ recent: [Date], now: Date) -> Int? {
        guard recent.count >= limit else { return nil }
        let oldestThatCounts = recent[recent.count - limit]
        let wait = oldestThatCounts.addingTimeInterval(window).timeIntervalSince(now)
        return max(1, Int(wait.rounded(.up)))
    }

    /// An attempt being evaluated: counted as a failure of its address until ``settle(_:failed:)`` says it succeeded.
    public struct Attempt: Sendable, Equatable {
        fileprivate let key: String
        fileprivate let stamp: Date
    }

    /// Starts evaluating `token` from `address`: throws ``PairingError/rateLimited(retryAfterSeconds:)`` when the
    /// address must wait (a known-good token is never refused), else counts the attempt as a failure at once, in the
    /// same step as the check, and returns it for ``settle(_:failed:)``.
    ///
    /// `nil` for a known-good token (not counted).
    public func begin(_ address: String, presenting token: String?) throws(PairingError) -> Attempt? {
        if let token, isKnownGood(token) { return nil }
        let now = clock.now()
        let key = Self.key(address)
        let refused: Int? = state.withLock { state in
            var recent = Self.prune(&state, key, now: now, window: window)
            if let wait = wait(recent, now: now) { return wait }
            recent.append(now)
            state.failures[key] = recent
            if state.failures.count > maximumTrackedAddresses { evictAddresses(&state, now: now) }
            return nil
        }
        if let refused { throw .rateLimited(retryAfterSeconds: refused) }
        return Attempt(key: key, stamp: now)
    }

    /// Ends an attempt ``begin(_:presenting:)`` counted: one that did not fail is no longer counted.
    public func settle(_ attempt: Attempt?, failed: Bool) {
        guard let attempt, !failed else { return }
        state.withLock { state in
            guard var stamps = state.failures[attempt.key], let index = stamps.lastIndex(of: attempt.stamp) else { return }
            stamps.remove(at: index)
            state.failures[attempt.key] = stamps.isEmpty ? nil : stamps
        }
    }

    /// Throws ``PairingError/rateLimited(retryAfterSeconds:)`` when `address` must wait.
    public func check(_ address: String) throws(PairingError) {
        if let wait = retryAfter(for: address) { throw .rateLimited(retryAfterSeconds: wait) }
    }

    /// Throws ``PairingError/rateLimited(retryAfterSeconds:)`` when `address` must wait and `token` is not a known-good
    /// token: the check to run before a token goes to the store.
    public func check(_ address: String, presenting token: String?) throws(PairingError) {
        guard let wait = retryAfter(for: address) else { return }
        if let token, isKnownGood(token) { return }
        throw .rateLimited(retryAfterSeconds: wait)
    }

    /// Records one failed attempt from `address`.
    public func recordFailure(from address: String) {
        let now = clock.now()
        let key = Self.key(address)
        state.withLock { state in
            var recent = Self.prune(&state, key, now: now, window: window)
            recent.append(now)
            if recent.count > limit { recent.removeFirst(recent.count - limit) }
            state.failures[key] = recent
            if state.failures.count > maximumTrackedAddresses { evictAddresses(&state, now: now) }
        }
    }

    /// Remembers `token` as good until `expiry` (a token the bridge issued, or one the store accepted), so its holder
    /// is not refused for other people's failures from the same address.
    ///
    /// Only the token's digest is kept.
    public func rememberGood(token: String, until expiry: Date) {
        let now = clock.now()
        guard expiry > now else { return }
        let digest = TokenSecret.hash(token)
        state.withLock { state in
            state.knownTokens[digest] = expiry
            guard state.knownTokens.count > maximumKnownTokens else { return }
            state.knownTokens = state.knownTokens.filter { $0.value > now }
            let excess = state.knownTokens.count - maximumKnownTokens
            guard excess > 0 else { return }
            for (digest, _) in state.knownTokens.sorted(by: { $0.value < $1.value }).prefix(excess) {
                state.knownTokens.removeValue(forKey: digest)
            }
        }
    }

    /// Remembers `token` as good for `seconds` from now (see ``rememberGood(token:until:)``).
    public func rememberGood(token: String, for seconds: TimeInterval) {
        rememberGood(token: token, until: clock.now().addingTimeInterval(seconds))
    }

    /// Whether `token` was remembered as good and has not expired.
    public func isKnownGood(_ token: String) -> Bool {
        let now = clock.now()
        let digest = TokenSecret.hash(token)
        return state.withLock { state in
            guard let expiry = state.knownTokens[digest] else { return false }
            if expiry <= now {
                state.knownTokens.removeValue(forKey: digest)
                return false
            }
            return true
        }
    }

    /// Forgets the failures of `address` (for example after the desktop user unblocks it).
    public func reset(_ address: String) {
        let key = Self.key(address)
        state.withLock { _ = $0.failures.removeValue(forKey: key) }
    }

    /// The bucket an address counts in (see ``NetworkPolicy/rateLimitKey(fromRemoteAddress:)``).
    private static func key(_ address: String) -> String {
        NetworkPolicy.rateLimitKey(fromRemoteAddress: address)
    }

    /// Drops timestamps older than the window for `address` and returns the rest.
    private static func prune(_ state: inout State, _ address: String, now: Date, window: TimeInterval) -> [Date] {
        guard let stamps = state.failures[address] else { return [] }
        let recent = stamps.filter { now.timeIntervalSince($0) < window }
        state.failures[address] = recent.isEmpty ? nil : recent
        return recent
    }

    /// Drops expired entries, then the stalest addresses, until under the bound.
    private func evictAddresses(_ state: inout State, now: Date) {
        state.failures = state.failures.filter { _, stamps in stamps.contains { now.timeIntervalSince($0) < window } }
        guard state.failures.count > maximumTrackedAddresses else { return }
        let stalest = state.failures.sorted { ($0.value.last ?? .distantPast) < ($1.value.last ?? .distantPast) }
        for (address, _) in stalest.prefix(state.failures.count - maximumTrackedAddresses) {
            state.failures.removeValue(forKey: address)
        }
    }
}
