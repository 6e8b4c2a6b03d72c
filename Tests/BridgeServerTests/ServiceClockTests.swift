import BridgePairing
import BridgeServer
import BridgeTLS
import BridgeTestKit
import Foundation
import Logging
import Testing

/// What `serve` starts reads the time from the configuration's one clock (issue 31 item 4): the pairing code's and the
/// tokens' expiry, and the TLS certificate's validity, follow a clock a test (or an embedding app) sets.
@Suite("BridgeService on the configuration's clock", .timeLimit(.minutes(1)), .tags(.unit))
struct ServiceClockTests {
    /// A wall time far from the machine's.
    static let longAgo = Date(timeIntervalSince1970: 1_000_000_000)

    @Test("the pairing code, a paired device's tokens and the TLS certificate are dated by the configuration's clock")
    func datedByTheClock() async throws {
        var configuration = BridgeServerConfiguration(serverName: "Clock Desk", workingDirectory: try TestBridge.makeDirectory())
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.clock = ManualBridgeClock(wallStart: ServiceClockTests.longAgo)
        var options = BridgeService.Options(configuration: configuration, stateDirectory: URL(fileURLWithPath: try TestBridge.makeDirectory()))
        options.auth = .token(requireApproval: false)
        var logger = Logger(label: "test.service-clock")
        logger.logLevel = .critical
        let service = try await BridgeService(options: options, logger: logger)

        _ = try await service.pairing.payload()
        #expect(await service.pairing.expiresAt() == ServiceClockTests.longAgo.addingTimeInterval(3600))
        let store = try #require(service.pairing.store)
        let code = try await store.issuePairingToken()
        guard case .paired(let session) = try await store.exchange(pairingToken: code.token, deviceName: "phone") else {
            Issue.record("the exchange did not pair")
            return
        }
        #expect(session.accessToken.expiresAt == ServiceClockTests.longAgo.addingTimeInterval(900))
        // Valid for a year from the clock's time (certificates keep whole seconds).
        let year: TimeInterval = 365 * 24 * 3600
        #expect(abs(service.identity.notValidAfter.timeIntervalSince(ServiceClockTests.longAgo.addingTimeInterval(year))) < 2)
    }
}
