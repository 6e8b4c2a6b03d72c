import BridgeClient
import BridgeDiscovery
import BridgePairing
import BridgeServer
import BridgeTLS
import BridgeTestKit
import Foundation
import Testing

@Suite("Probes say per address what answered", .timeLimit(.minutes(1)), .tags(.loopback))
struct ProbeRunnerTests {
    static func service(port: Int, addresses: [ServiceAddress], txt: [String: String] = [:]) -> ResolvedService {
        ResolvedService(
            instance: ServiceInstance(name: "desk", type: "_openagents._tcp"), hostName: "desk.local",
            port: UInt16(port), addresses: addresses, txt: txt, interfaces: ["lo"])
    }

    static let loopbacks = [ServiceAddress(ip: "127.0.0.1", family: .ipv4), ServiceAddress(ip: "::1", family: .ipv6)]

    @Test("a bridge without auth: every address answered initialize, with its agent")
    func answered() async throws {
        try await TestBridge.with(configure: { $0.host = "::" }, { port, _ in
            // The default 3 s is for a phone on a LAN; the whole suite running in parallel on 2 cores can take longer
            // to start the demo agent, and this test is about the outcome, not the time.
            let report = await ProbeRunner(timeout: .seconds(20), logger: WebSocketConnectorTests.logger).probe(Self.service(port: port, addresses: Self.loopbacks))
            #expect(report.probes.map(\.outcome) == [.answered, .answered])
            #expect(report.probes.map(\.address) == ["127.0.0.1", "::1"])
            #expect(report.probes.map(\.url) == ["ws://127.0.0.1:\(port)/", "ws://[::1]:\(port)/"])
            #expect(report.best?.protocolVersion != nil)
            #expect(report.probes.allSatisfy { $0.error == nil && $0.ms > 0 })
        })
    }

    @Test("a default (token) bridge: needs_pairing on every address, not 'nothing answers'; the best outcome is kept")
    func needsPairing() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("oa-bridge-probe-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let authenticator = Authenticator(store: try TokenStore(directory: directory, logger: WebSocketConnectorTests.logger))
        let reserved = try ReservedPort()
        defer { withExtendedLifetime(reserved) {} }
        let closed = reserved.port
        try await TestBridge.with(configure: {
            $0.host = "::"
            $0.authorizeUpgrade = authenticator.upgradeAuthorizer()
        }, { port, _ in
            let report = await ProbeRunner(timeout: .seconds(20), logger: WebSocketConnectorTests.logger).probe(Self.service(port: port, addresses: Self.loopbacks))
            #expect(report.probes.map(\.outcome) == [.needsPairing, .needsPairing])
            #expect(report.probes.allSatisfy { $0.error?.contains("401") == true })

            // One address with nothing listening: it says refused, the summary keeps needs_pairing.
            let mixed = ProbeReport(probes: [
                await ProbeRunner(logger: WebSocketConnectorTests.logger).probe(url: "ws://127.0.0.1:\(closed)/"),
            ] + report.probes)
            #expect(mixed.probes.first?.outcome == .refused)
            #expect(mixed.best?.outcome == .needsPairing)
            #expect(mixed.best?.address == "127.0.0.1")
        })
    }

    @Test("a peer that never answers: timeout, within the probe's time")
    func timeout() async throws {
        try await SilentServer.with { port, _ in
            let started = ContinuousClock.now
            let attempt = await ProbeRunner(timeout: .milliseconds(500), logger: WebSocketConnectorTests.logger).probe(url: "ws://127.0.0.1:\(port)/")
            #expect(attempt.outcome == .timeout)
            #expect(ContinuousClock.now - started < .seconds(10))
        }
    }

    @Test("TLS: a pinned probe of another key is tls_mismatch; trust on first use reports the pin seen")
    func tls() async throws {
        try await TLSTestServer.with { port, pin in
            let other = try CertificatePin(digest: Array(repeating: 1, count: 32))
            let mismatch = await ProbeRunner(timeout: .seconds(20), pin: other, logger: WebSocketConnectorTests.logger).probe(url: "wss://127.0.0.1:\(port)/")
            #expect(mismatch.outcome == .tlsMismatch)
            // The test server wants a token: the probe gets through TLS and reports the pin with needs_pairing.
            let firstUse = await ProbeRunner(timeout: .seconds(20), logger: WebSocketConnectorTests.logger).probe(
                Self.service(port: port, addresses: [Self.loopbacks[0]], txt: ["tls": "1"]))
            #expect(firstUse.probes.map(\.outcome) == [.needsPairing])
            #expect(firstUse.probes.first?.url == "wss://127.0.0.1:\(port)/")
        }
    }

    @Test("the JSON form: address, url, outcome, ms, error")
    func json() throws {
        let attempt = ProbeAttempt(address: "fe80::2%eth0", url: "ws://[fe80::2%25eth0]:9099/", outcome: .needsPairing, ms: 3.5, error: "HTTP 401")
        let object = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(attempt)) as? [String: Any]
        #expect(object?["outcome"] as? String == "needs_pairing")
        #expect(object?["address"] as? String == "fe80::2%eth0")
        #expect(object?["ms"] as? Double == 3.5)
        #expect(Set(ProbeOutcome.allCases.map(\.rawValue)) == ["answered", "needs_pairing", "refused", "timeout", "tls_mismatch", "error"])
    }

    @Test("doctor's loopback check: the bridge runs, and its auth mode without a token")
    func localBridge() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("oa-bridge-probe-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let authenticator = Authenticator(store: try TokenStore(directory: directory, logger: WebSocketConnectorTests.logger))
        try await TestBridge.with(configure: {
            $0.authenticator = authenticator
            $0.authorizeUpgrade = authenticator.upgradeAuthorizer()
        }, { port, _ in
            let finding = await ProbeLocalBridge(port: port, timeout: TestBounds.notUnderTest).check()
            #expect(finding.running)
            #expect(finding.auth == .token)
        })
        try await TestBridge.with { port, _ in
            let finding = await ProbeLocalBridge(port: port, timeout: TestBounds.notUnderTest).check()
            #expect(finding.running)
            #expect(finding.auth == ProbeLocalBridge.Auth.none)
        }
        let reserved = try ReservedPort()
        defer { withExtendedLifetime(reserved) {} }
        let nothing = await ProbeLocalBridge(port: reserved.port).check()
        #expect(!nothing.running && nothing.auth == nil && nothing.error != nil)
    }
}
