import BridgeClient
import BridgePairing
import BridgeServer
import BridgeTestKit
import BridgeTime
import Foundation
import Logging
import Testing

/// The Swift client's DPoP against a real bridge (`--dpop optional`) when the client's clock is off by minutes (issue
/// 30): its proofs' `iat` fall outside the bridge's window (2 minutes back, 1 minute ahead), the bridge refuses them
/// (`invalid_dpop_proof`), and the client corrects its clock by the bridge's `Date` (the exchange's answer, or
/// `/api/health`'s when an upgrade refusal has none) and tries once more.
///
/// The clock is injected; the system's is untouched.
@Suite("DPoP on the client: a skewed clock corrected by the bridge's", .timeLimit(.minutes(1)), .tags(.loopback))
struct DPoPClientClockTests {
    static func withBridge<T: Sendable>(_ body: @Sendable (_ port: Int, _ store: TokenStore) async throws -> T) async throws -> T {
        var logger = Logger(label: "test.dpop-clock")
        logger.logLevel = .critical
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("oa-dpop-clock-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try TokenStore(directory: directory, logger: logger)
        return try await TestBridge.with(configure: {
            $0.authenticator = Authenticator(store: store, dpop: DPoPPolicy(mode: .optional))
            // The pairing routes (/api/auth/exchange, /api/auth/refresh) come with a pairing session.
            $0.pairing = PairingSession(store: store, endpoint: .init(host: "192.0.2.2", session: "session-1", name: "desk"))
        }, { port, _ in try await body(port, store) })
    }

    @Test("a clock 10 minutes behind or ahead pairs bound, and a new binding on that clock opens a WebSocket",
          arguments: [-600.0, 600.0])
    func skewedClock(skew: TimeInterval) async throws {
        try await Self.withBridge { port, store in
            // The client's clock stands `skew` away from the bridge's (the system's) and runs with it: a clock that
            // stood still would drift from the bridge's by the test's own time (seconds on a loaded 2-core machine).
            let clock = SkewedClock(skew: skew)
            let vault = TokenVault(file: nil, clock: clock)
            let pairing = try await store.issuePairingToken()
            let paired = try await vault.pair(bridge: "http://127.0.0.1:\(port)", pairingToken: pairing.token, deviceName: "skewed")
            #expect(paired.tokens.tokenType == "DPoP")
            let credential = try await vault.credential()
            let binding = try #require(credential.proofKey)
            // The exchange was refused for its iat once, then corrected by the answer's Date.
            #expect(abs(binding.clockOffset + skew) < 5, "offset \(binding.clockOffset) for a skew of \(skew)")
            let client = try await BridgeRPCClient.connect(to: "ws://127.0.0.1:\(port)/", credential: credential, timeout: TestBounds.notUnderTest, logger: logger)
            defer { client.close() }
            _ = try await BridgeAgentClient(connection: client).initialize(clientName: "skewed")

            // The same key on a binding that knows nothing of the bridge's clock yet: the upgrade is refused for its
            // iat (a refusal without Date), the client asks /api/health for the bridge's clock and tries once more.
            let fresh = DPoPClientBinding(signer: binding.signer, clock: clock)
            let again = try await BridgeRPCClient.connect(
                to: "ws://127.0.0.1:\(port)/", credential: BridgeCredential(accessToken: credential.accessToken, proofKey: fresh),
                timeout: TestBounds.notUnderTest, logger: logger)
            defer { again.close() }
            _ = try await BridgeAgentClient(connection: again).initialize(clientName: "skewed again")
            #expect(abs(fresh.clockOffset + skew) < 5)
        }
    }

    @Test("a proof refused for another cause (another key) is not retried for the clock: unauthorized, offset untouched")
    func otherRefusal() async throws {
        try await Self.withBridge { port, store in
            let vault = TokenVault(file: nil)
            let pairing = try await store.issuePairingToken()
            _ = try await vault.pair(bridge: "http://127.0.0.1:\(port)", pairingToken: pairing.token, deviceName: "right")
            let credential = try await vault.credential()
            // Another device's key (paired apart): the proof verifies but is not the family's key.
            let other = TokenVault(file: nil)
            _ = try await other.pair(
                bridge: "http://127.0.0.1:\(port)", pairingToken: try await store.issuePairingToken().token, deviceName: "other")
            let thief = try #require(try await other.credential().proofKey)
            await #expect(throws: BridgeClientError.self) {
                _ = try await BridgeRPCClient.connect(
                    to: "ws://127.0.0.1:\(port)/", credential: BridgeCredential(accessToken: credential.accessToken, proofKey: thief),
                    timeout: TestBounds.notUnderTest, logger: logger)
            }
            #expect(thief.clockOffset == 0)
        }
    }

    /// The system's clock with its wall time `skew` seconds away: a client whose clock is set wrong.
    struct SkewedClock: BridgeClock {
        let skew: TimeInterval
        var now: ContinuousClock.Instant { ContinuousClock.now }
        var wallTime: Date { Date().addingTimeInterval(skew) }
        func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration?) async throws {
            try await ContinuousClock().sleep(until: deadline, tolerance: tolerance)
        }
    }

    var logger: Logger {
        var logger = Logger(label: "test.dpop-clock.client")
        logger.logLevel = .critical
        return logger
    }
}
