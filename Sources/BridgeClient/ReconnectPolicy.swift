/// When to try again after a lost connection: exponential backoff with full jitter, capped, reset
/// after a success, forever by default.
public struct ReconnectPolicy: Sendable, Hashable {
    /// The first delay's upper bound.
    public var initialDelay: Duration
    /// The largest delay.
    public var maximumDelay: Duration
    /// The growth factor per failed attempt.
    public var multiplier: Double
    /// Give up after this many consecutive failures; `nil` never gives up.
    public var maximumAttempts: Int?

    /// Creates a policy (defaults: 250 ms doubling up to 30 s, forever).
    public init(initialDelay: Duration = .milliseconds(250), maximumDelay: Duration = .seconds(30), multiplier: Double = 2, maximumAttempts: Int? = nil) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.multiplier = multiplier
        self.maximumAttempts = maximumAttempts
    }

    /// The delay before attempt `attempt` (0 = the first retry), or `nil` to give up.
    ///
    /// `random` returns a number in 0...1 (injectable for tests).
    public func delay(forAttempt attempt: Int, random: () -> Double = { Double.random(in: 0...1) }) -> Duration? {
        if let maximumAttempts, attempt >= maximumAttempts { return nil }
        let base = ReconnectPolicy.seconds(initialDelay) * pow(multiplier, Double(max(0, attempt)))
        let capped = min(base, ReconnectPolicy.seconds(maximumDelay))
        // Full jitter (AWS architecture blog, "Exponential Backoff And Jitter"): spread clients out.
        let jittered = capped * min(1, max(0, random()))
        return .milliseconds(Int((jittered * 1_000).rounded()))
    }

    private static func seconds(_ duration: Duration) -> Double {
        let parts = duration.components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }

    private func pow(_ base: Double, _ exponent: Double) -> Double {
        var result = 1.0
        for _ in 0..<Int(min(exponent, 64)) { result *= base }
        return result
    }
}
