import BridgeTestKit
import Testing
@testable import BridgeClient

@Suite("Happy Eyeballs racing", .tags(.unit))
struct HappyEyeballsTests {
    struct Refused: Error {}

    let a = BridgeEndpoint(source: .mdns, host: "a")
    let b = BridgeEndpoint(source: .manual, host: "b")
    let c = BridgeEndpoint(source: .tailscale, host: "c")

    /// On a clock the test moves (issue 31 item 4): the second candidate starts when the delay has passed on it
    /// (at 0.25 s exactly, whatever the machine's load).
    @Test("a slow first candidate loses to a fast second one started after the delay")
    func slowFirstLoses() async throws {
        let clock = ManualBridgeClock()
        let race = HappyEyeballs(attemptDelay: .milliseconds(250), clock: clock)
        let (a, b) = (a, b)
        let racing = Task {
            try await race.race([a, b]) { endpoint in
                // The first candidate never answers: it ends only when the race cancels it.
                if endpoint.host == "a" { try await clock.sleep(for: .seconds(3600)) }
                return endpoint.host
            }
        }
        // The first attempt and the delay before the second both sleep on the clock.
        #expect(await clock.waitForSleepers(2))
        clock.advance(by: .milliseconds(250))
        let result = try await racing.value
        #expect(result.value == "b")
        #expect(result.attempts.count == 2)
        #expect(result.attempts[0].outcome == "cancelled")
        #expect(result.attempts[1].outcome == "won")
        #expect(result.attempts[1].startedAt == 0.25)
    }

    @Test("a failure starts the next candidate at once")
    func failureStartsNext() async throws {
        // The clock stands still: only a failure can start the next candidate.
        let race = HappyEyeballs(attemptDelay: .seconds(1), clock: ManualBridgeClock())
        let result = try await race.race([a, b, c]) { endpoint in
            if endpoint.host != "c" { throw Refused() }
            return endpoint.host
        }
        #expect(result.value == "c")
        #expect(result.attempts.map(\.endpoint.host) == ["a", "b", "c"])
        #expect(result.attempts[2].startedAt == 0)
    }

    @Test("the first candidate wins when it answers within the delay, and no other is started")
    func fastFirstWins() async throws {
        let race = HappyEyeballs(attemptDelay: .seconds(2))
        let result = try await race.race([a, b, c]) { $0.host }
        #expect(result.value == "a")
        #expect(result.attempts.count == 1)
    }

    @Test("when every candidate fails, the error lists each attempt")
    func allFail() async {
        let race = HappyEyeballs(attemptDelay: .milliseconds(10))
        do {
            _ = try await race.race([a, b]) { _ -> String in throw Refused() }
            Issue.record("the race should have failed")
        } catch {
            guard case .noEndpointReachable(let attempts) = error else {
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(attempts.count == 2)
            #expect(attempts[0].contains("ws://a:9099/"))
        }
    }

    @Test("when two attempts succeed at once, the loser is closed and the winner is not")
    func loserClosed() async throws {
        let bothStarted = Barrier(count: 2)
        let closed = ClosedLog()
        let race = HappyEyeballs(attemptDelay: .milliseconds(1))
        let result = try await race.race([a, b]) { endpoint in
            await bothStarted.arrive()  // neither returns before the other has started: both succeed
            return endpoint.host
        } closeLoser: { loser in
            await closed.add(loser)
        }
        let loser = result.value == "a" ? "b" : "a"
        #expect(await closed.hosts == [loser])
        let report = result.attempts.first { $0.endpoint.host == loser }
        #expect(report?.outcome == "succeeded after the winner; closed")
    }

    @Test("no candidates is an error, not a hang")
    func empty() async {
        await #expect(throws: BridgeClientError.self) {
            _ = try await HappyEyeballs().race([]) { $0.host }
        }
    }
}

/// Lets `count` tasks through together.
private actor Barrier {
    private let count: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []
    init(count: Int) { self.count = count }

    func arrive() async {
        await withCheckedContinuation { continuation in
            waiting.append(continuation)
            if waiting.count == count {
                for waiter in waiting { waiter.resume() }
                waiting.removeAll()
            }
        }
    }
}

/// The values a race closed, in order.
private actor ClosedLog {
    private(set) var hosts: [String] = []
    func add(_ host: String) { hosts.append(host) }
}
