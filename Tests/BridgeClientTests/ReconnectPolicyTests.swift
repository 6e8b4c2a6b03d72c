import Testing
@testable import BridgeClient

@Suite("Reconnect backoff", .tags(.unit))
struct ReconnectPolicyTests {
    @Test("delays grow exponentially up to the cap")
    func growth() {
        let policy = ReconnectPolicy(initialDelay: .milliseconds(100), maximumDelay: .seconds(2))
        let delays = (0..<8).compactMap { policy.delay(forAttempt: $0, random: { 1 }) }
        #expect(delays == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800),
                           .milliseconds(1_600), .seconds(2), .seconds(2), .seconds(2)])
    }

    @Test("full jitter picks a delay between zero and the bound")
    func jitter() {
        let policy = ReconnectPolicy(initialDelay: .seconds(1))
        #expect(policy.delay(forAttempt: 0, random: { 0 }) == .zero)
        #expect(policy.delay(forAttempt: 0, random: { 0.5 }) == .milliseconds(500))
        for _ in 0..<100 {
            let delay = policy.delay(forAttempt: 3)
            #expect(delay.map { $0 >= .zero && $0 <= .seconds(8) } == true)
        }
    }

    @Test("forever by default; a limit gives up")
    func limits() {
        #expect(ReconnectPolicy().delay(forAttempt: 10_000) != nil)
        let limited = ReconnectPolicy(maximumAttempts: 3)
        #expect(limited.delay(forAttempt: 2) != nil)
        #expect(limited.delay(forAttempt: 3) == nil)
    }
}
