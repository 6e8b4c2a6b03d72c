import BridgeClient
import BridgeDiagnostics
import BridgeDiscovery
import Foundation

/// Writes what `discover` sees: the library's ``DiscoveryReport`` says it, this writes each line as it comes,
/// unbuffered (`--watch | grep` must see a line when it happens).
actor DiscoverOutput {
    private var report: DiscoveryReport

    init(json: Bool, watch: Bool, probe: Bool, type: ServiceType) {
        report = DiscoveryReport(json: json, watch: watch, probe: probe, type: type, conflictFix: FlagAdvice.fix(for:), say: FlagAdvice.command(for:))
    }

    func snapshot() -> [ProbedService] { report.snapshot() }
    func isSettled() -> Bool { report.isSettled() }
    func probeStarted() { report.probeStarted() }
    func probeEnded() { report.probeEnded() }
    func presentTypes() -> [ServiceTypeSighting] { report.presentTypes() }
    func typesSettled() -> Bool { report.typesSettled() }

    func handle(_ event: BrowseEvent, probe result: HandshakeProbe.Result?) { write { $0.handle(event, probe: result) } }
    func daemonUnavailable(reason: String) { write { $0.daemonUnavailable(reason: reason) } }
    func finish(services found: [ProbedService]) { write { $0.finish(services: found) } }
    func typeEvent(_ event: ServiceTypeEvent) { write { $0.typeEvent(event) } }
    func finishTypes(_ types: [ServiceTypeSighting]) { write { $0.finishTypes(types) } }
    func resolved(_ resolution: HostResolution) { write { $0.resolved(resolution) } }

    private func write(_ change: (inout DiscoveryReport) -> Void) {
        change(&report)
        for line in report.takeLines() {
            switch line {
            case .standardOutput(let text): FileHandle.standardOutput.write(Data((text + "\n").utf8))
            case .standardError(let text): FileHandle.standardError.write(Data((text + "\n").utf8))
            }
        }
    }
}
