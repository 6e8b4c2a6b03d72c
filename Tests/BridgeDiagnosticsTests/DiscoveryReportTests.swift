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
        #expect(advice.contains("A browse of every service type on the network tells") && !advice.contains("--"), "the command line names the flags: \(advice)")
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

    @Test("The one-shot advice and --all's verdict say the steps as the caller words them (the command line names the flags)")
    func stepsFromTheCaller() {
        var report = DiscoveryReport(json: false, watch: false, probe: false, type: .openAgents) { $0.fix } say: { "<\($0)>" }
        report.finish(services: [])
        report.finishTypes([ServiceTypeSighting(type: "_ipp._tcp", interface: "eth0")])
        let out = report.takeLines().compactMap { if case .standardOutput(let line) = $0 { line } else { nil } }
        #expect(out.count == 2 && out[0].contains("(<watch>.)") && out[0].contains("<allTypes>."), "\(out)")
        #expect(out.last?.contains("discovery on (<discoveryOn>)") == true, "\(out)")
    }

    @Test("A conflict's fix is the caller's (the command line adds the flags) in JSON, --watch and the one-shot table")
    func conflictFixFromTheCaller() throws {
        func service(host: String, ip: String) -> ResolvedService {
            ResolvedService(instance: ServiceInstance(name: "Desk", type: "_openagents._tcp"), hostName: host, port: 9099,
                            addresses: [ServiceAddress(ip: ip, family: .ipv4)], txt: ["v": "1"], interfaces: ["eth0"])
        }
        for (json, watch) in [(true, false), (false, true), (false, false)] {
            var report = DiscoveryReport(json: json, watch: watch, probe: false, type: .openAgents) { "caller's fix for \($0.kind)" }
            report.handle(.added(service(host: "desk.local", ip: "198.18.0.2")), probe: nil)
            report.handle(.updated(service(host: "other.local", ip: "198.18.0.3")), probe: nil)
            report.finish(services: [])
            let out = report.takeLines().compactMap { if case .standardOutput(let line) = $0 { line } else { nil } }
            if json {
                let records = try out.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                let conflict = records.first { $0?["event"] as? String == "conflict" }
                #expect(conflict??["fix"] as? String == "caller's fix for shared_name", "\(out)")
            } else {
                #expect(out.contains { $0.contains("conflict: ") && $0.hasSuffix("  fix: caller's fix for shared_name") }, "\(out)")
            }
        }
        var plain = DiscoveryReport(json: false, watch: true, probe: false, type: .openAgents)
        plain.handle(.added(service(host: "desk.local", ip: "198.18.0.2")), probe: nil)
        plain.handle(.updated(service(host: "other.local", ip: "198.18.0.3")), probe: nil)
        let words = plain.takeLines().compactMap { if case .standardOutput(let line) = $0, line.contains("conflict: ") { line } else { nil } }
        #expect(words.count == 1 && words.first?.contains("give each bridge its own name") == true, "by default the library's words: \(words)")
    }
}
