import BridgeDiagnostics
import BridgeDiscovery
import Foundation
import Testing

/// What `discover` says, as lines, without a daemon.
@Suite("Discovery report", .tags(.unit))
struct DiscoveryReportTests {
    @Test("A one-shot browse that found nothing gives the advice on stdout; an unreachable daemon the hint on stderr")
    func nothingFoundAndNoDaemon() {
        var report = DiscoveryReport(json: false, watch: false, probe: false, type: .openAgents)
        report.finish(services: [])
        report.daemonUnavailable(reason: "no bus")
        let lines = report.takeLines()
        #expect(lines.count == 2)
        guard case .standardOutput(let advice) = lines.first, case .standardError(let hint) = lines.last else {
            Issue.record("unexpected lines \(lines)")
            return
        }
        #expect(advice.hasPrefix("No _openagents._tcp services found within"))
        #expect(advice.contains("oa-bridge discover --all"))
        #expect(hint.hasPrefix("discovery unavailable: no bus."))
        #expect(hint.contains("avahi-daemon"))
        #expect(report.takeLines().isEmpty, "lines are handed over once")
    }

    @Test("--json: one JSON record per event on stdout, nothing printed at the end")
    func jsonRecords() throws {
        var report = DiscoveryReport(json: true, watch: false, probe: false, type: .openAgents)
        report.daemonUnavailable(reason: "no bus")
        report.finish(services: [])
        let lines = report.takeLines()
        guard case .standardOutput(let record) = lines.first else {
            Issue.record("no JSON record first: \(lines)")
            return
        }
        let object = try JSONSerialization.jsonObject(with: Data(record.utf8)) as? [String: Any]
        #expect(object?["event"] as? String == "daemon_unavailable")
        #expect(object?["message"] as? String == "no bus")
        #expect(lines.count == 2, "the record, then the hint on stderr; no table under --json")
    }

    @Test("A browse is not settled while a probe runs, however long it takes; the quiet window restarts when it ends")
    func probeHoldsSettling() {
        var report = DiscoveryReport(json: true, watch: false, probe: true, type: .openAgents)
        let start = ContinuousClock.now
        report.handle(.allForNow, probe: nil)
        #expect(report.isSettled(at: start + .seconds(1)), "all for now and quiet for 400 ms: settled")
        report.probeStarted(at: start + .seconds(1))
        #expect(!report.isSettled(at: start + .seconds(30)), "a probe is under way")
        report.probeEnded(at: start + .seconds(30))
        #expect(!report.isSettled(at: start + .milliseconds(30_200)), "quiet for only 200 ms after the probe")
        #expect(report.isSettled(at: start + .milliseconds(30_500)))
    }
}
