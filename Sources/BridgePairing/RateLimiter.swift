import Foundation

/// Counts failed authentication attempts per source address in a sliding window and says when to refuse.
///
/// Typical use in a handler: `if let wait = limiter.retryAfter(for: address) { answer 429 with Retry-After: wait }`;
/// on a failed token check call ``recordFailure(from:)``. Successful attempts are not counted. Memory is bounded:
/// at most ``maximumTrackedAddresses`` addresses are tracked; the stalest are forgotten first.
public final class FailedAuthRateLimiter: @unchecked Sendable {
    /// Failures allowed per address within ``window``.
    public let limit: Int
    /// Length of the sliding window in seconds.
    public let window: TimeInterval
    /// Upper bound on the number of addresses remembered at once.
    public let maximumTrackedAddresses: Int

    private let clock: TokenClock
    private let lock = NSLock()
    private var failures: [String: [Date]] = [:]

    /// A limiter allowing `limit` failures per `window` seconds per address (default 10 per minute).
    public init(limit: Int = 10, window: TimeInterval = 60, maximumTrackedAddresses: Int = 10_000, clock: TokenClock = .system) {
        self.limit = max(1, limit)
        self.window = max(1, window)
        self.maximumTrackedAddresses = max(1, maximumTrackedAddresses)
        self.clock = clock
    }

    /// `nil` when `address` may try again now; otherwise the whole seconds to wait (for a `Retry-After` header).
    public func retryAfter(for address: String) -> Int? {
        let now = clock.now()
        return lock.withLock {
            let recent = prune(address, now: now)
            guard recent.count >= limit else { return nil }
            let oldestThatCounts = recent[recent.count - limit]
            let wait = oldestThatCounts.addingTimeInterval(window).timeIntervalSince(now)
            return max(1, Int(wait.rounded(.up)))
        }
    }

    /// Throws ``PairingError/rateLimited(retryAfterSeconds:)`` when `address` must wait.
    public func check(_ address: String) throws(PairingError) {
        if let wait = retryAfter(for: address) { throw .rateLimited(retryAfterSeconds: wait) }
    }

    /// Records one failed attempt from `address`.
    public func recordFailure(from address: String) {
        let now = clock.now()
        lock.withLock {
            var recent = prune(address, now: now)
            recent.append(now)
            if recent.count > limit { recent.removeFirst(recent.count - limit) }
            failures[address] = recent
            if failures.count > maximumTrackedAddresses { evict(now: now) }
        }
    }

    /// Forgets the failures of `address` (e.g. after the desktop user unblocks it).
    public func reset(_ address: String) {
        lock.withLock { _ = failures.removeValue(forKey: address) }
    }

    /// Drops timestamps older than the window for `address`; must hold the lock.
    private func prune(_ address: String, now: Date) -> [Date] {
        guard let stamps = failures[address] else { return [] }
        let recent = stamps.filter { now.timeIntervalSince($0) < window }
        failures[address] = recent.isEmpty ? nil : recent
        return recent
    }

    /// Drops expired entries, then the stalest addresses, until under the bound; must hold the lock.
    private func evict(now: Date) {
        failures = failures.filter { _, stamps in stamps.contains { now.timeIntervalSince($0) < window } }
        guard failures.count > maximumTrackedAddresses else { return }
        let stalest = failures.sorted { ($0.value.last ?? .distantPast) < ($1.value.last ?? .distantPast) }
        for (address, _) in stalest.prefix(failures.count - maximumTrackedAddresses) {
            failures.removeValue(forKey: address)
        }
    }
}
