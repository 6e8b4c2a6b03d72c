public import BridgeClient
public import BridgeDiscovery
import Foundation

/// What `oa-bridge discover` says about a browse, as lines for standard output and standard error: JSON records
/// (`--json`), timestamped changes (`--watch`), or a one-shot table with conflicts and advice.
///
/// The state is the `DiscoveryWatcher` (services, diffs, conflicts, settling) and the probe results beside it;
/// the caller writes the lines ``takeLines()`` hands over, so any front end can show the same.
public struct DiscoveryReport: Sendable {
    /// A line to write, without its newline.
    public enum Line: Sendable, Hashable {
        /// For standard output: a record, a change or the table.
        case standardOutput(String)
        /// For standard error: warnings, hints and timings.
        case standardError(String)
    }

    /// One JSON line: the library's record with the handshake result under `probe`.
    public typealias Record = DiscoveryRecord<DiscoveryProbeJSON>

    private let json: Bool
    private let watch: Bool
    private let probe: Bool
    private let type: ServiceType
    private let start = ContinuousClock.now
    private var watcher = DiscoveryWatcher()
    private var probes: [ServiceInstance: HandshakeProbe.Result] = [:]
    /// Probes started and not yet ended.
    private var probesUnderWay = 0
    /// Conflicts found in a one-shot browse, printed under the table.
    private var conflicts: [DiscoveryConflict] = []
    /// A conflict's fix as printed: the library's words, or the caller's with the flags of its settings.
    private let conflictFix: @Sendable (DiscoveryConflict) -> String
    /// A step the advice points to, as printed: its words, or the caller's command and flag.
    private let say: @Sendable (DiscoverStep) -> String

    /// A report for `type`: JSON lines, `--watch` lines, or (neither) a one-shot table at the end.
    ///
    /// `conflictFix` says a conflict's fix (the command line adds the flags of `DiscoveryConflict.settings`; by
    /// default its words), `say` a step the advice points to (the command line names its flag; by default
    /// `DiscoverStep.words`).
    public init(json: Bool, watch: Bool, probe: Bool, type: ServiceType, conflictFix: @escaping @Sendable (DiscoveryConflict) -> String = \.fix,
                say: @escaping @Sendable (DiscoverStep) -> String = \.words) {
        self.conflictFix = conflictFix
        self.say = say
        self.json = json
        self.watch = watch
        self.probe = probe
        self.type = type
    }

    /// The services present now, in the order they were found.
    public func snapshot() -> [ProbedService] {
        watcher.present.map { ProbedService(service: $0, probe: probes[$0.instance]) }
    }

    /// Whether the daemon has said everything, no probe is under way, and nothing happened for 400 ms.
    public func isSettled(at now: ContinuousClock.Instant = .now) -> Bool {
        probesUnderWay == 0 && watcher.isSettled(at: now, quietFor: .milliseconds(400))
    }

    /// A sighting is being probed before it is handled: the browse is not settled until ``probeEnded(at:)``, however
    /// long the probe takes (over TLS to several addresses on a busy machine it can outlast the quiet window, and a
    /// browse that settled meanwhile would end without the service it is probing).
    public mutating func probeStarted(at now: ContinuousClock.Instant = .now) {
        probesUnderWay += 1
        watcher.touch(at: now)
    }

    /// The probe ``probeStarted(at:)`` announced is over; the quiet window starts again at `now`.
    public mutating func probeEnded(at now: ContinuousClock.Instant = .now) {
        probesUnderWay = max(0, probesUnderWay - 1)
        watcher.touch(at: now)
    }

    /// Reads one browse event (with its probe result) and says what it means.
    public mutating func handle(_ event: BrowseEvent, probe result: HandshakeProbe.Result?) {
        switch event {
        case .added(let service), .updated(let service):
            if let result { probes[service.instance] = result }
        case .removed(let instance):
            probes.removeValue(forKey: instance)
        default:
            break
        }
        for change in watcher.apply(event, at: .now) { show(change) }
    }

    private mutating func show(_ change: WatchEvent) {
        switch change {
        case .added(let service):
            let result = probes[service.instance]
            if json {
                emit(Record(event: "added", seconds: elapsed, service: service, probe: result.map(DiscoveryProbeJSON.init)))
            } else if watch {
                lines.append(.standardOutput("\(stamp) + added   \(DiscoveryText.summary(service, probe: result))"))
            }
        case .updated(let service, let diff):
            let result = probes[service.instance]
            if json {
                emit(Record(event: "updated", seconds: elapsed, service: service, probe: result.map(DiscoveryProbeJSON.init), diff: diff))
            } else if watch {
                lines.append(.standardOutput("\(stamp) ~ updated \(DiscoveryText.summary(service, probe: result))"))
                for line in diff.lines { lines.append(.standardOutput("            \(line)")) }
            }
        case .removed(let instance):
            if json {
                emit(Record(event: "removed", seconds: elapsed, instance: instance))
            } else if watch {
                lines.append(.standardOutput("\(stamp) - removed \(instance.name)"))
            }
        case .conflict(let conflict):
            if json {
                var record = Record(seconds: elapsed, conflict: conflict)
                record.fix = conflictFix(conflict)
                emit(record)
            } else if watch {
                lines.append(.standardOutput("\(stamp) ! \(conflict.text(fix: conflictFix(conflict)))"))
            } else {
                conflicts.append(conflict)
            }
        case .allForNow:
            if json {
                emit(Record(event: "all_for_now", seconds: elapsed))
            } else if watch {
                lines.append(.standardOutput("\(stamp)   (the daemon has reported every cached instance; waiting for more)"))
            }
        case .daemonUnavailable(let reason):
            daemonUnavailable(reason: reason)
        case .daemonAvailable:
            if json {
                emit(Record(event: "daemon_available", seconds: elapsed))
            } else {
                lines.append(.standardError("the mDNS daemon is back; browsing again"))
            }
        case .failure(let error):
            if json {
                emit(Record(event: "error", seconds: elapsed, message: error.description))
            }
            lines.append(.standardError("warning: \(error)"))
        }
    }

    /// The daemon cannot be reached: why, and how to start it.
    public mutating func daemonUnavailable(reason: String) {
        if json {
            emit(Record(event: "daemon_unavailable", seconds: elapsed, message: reason))
        }
        lines.append(.standardError("discovery unavailable: \(reason).\n\(DiscoveryText.daemonHint)"))
    }

    /// One-shot: the table, or why nothing was found, then any conflicts with their fixes.
    public mutating func finish(services found: [ProbedService]) {
        guard !json, !watch else { return }
        lines.append(.standardOutput(
            found.isEmpty
                ? DiscoveryText.nothingFound(type: type, seconds: elapsedSeconds, say: say) : DiscoveryText.table(found, probe: probe)))
        for conflict in conflicts { lines.append(.standardOutput(conflict.text(fix: conflictFix(conflict)))) }
    }

    /// `--all`: the types present and whether their browse has settled.
    private var types = ServiceTypeWatcher()

    /// The service types present now, in the order found.
    public func presentTypes() -> [ServiceTypeSighting] { types.present }

    /// Whether the type browse has settled (ALL_FOR_NOW, then 400 ms quiet).
    public func typesSettled() -> Bool { types.isSettled(at: .now, quietFor: .milliseconds(400)) }

    /// `--all`: one service type came or went.
    public mutating func typeEvent(_ event: ServiceTypeEvent) {
        types.apply(event, at: .now)
        switch event {
        case .added(let sighting):
            if json { emit(Record(event: "type_added", seconds: elapsed, sighting: sighting)) }
            else if watch { lines.append(.standardOutput("\(stamp) + \(sighting.type) on \(sighting.interface ?? "?")")) }
        case .removed(let sighting):
            if json { emit(Record(event: "type_removed", seconds: elapsed, sighting: sighting)) }
            else if watch { lines.append(.standardOutput("\(stamp) - \(sighting.type) on \(sighting.interface ?? "?")")) }
        case .allForNow:
            if json { emit(Record(event: "all_for_now", seconds: elapsed)) }
        case .daemonUnavailable(let reason):
            daemonUnavailable(reason: reason)
        case .failure(let error):
            if json { emit(Record(event: "error", seconds: elapsed, message: error.description)) }
            lines.append(.standardError("warning: \(error)"))
        }
    }

    /// `--all`, one-shot: the types as a table and what they say about mDNS here.
    public mutating func finishTypes(_ types: [ServiceTypeSighting]) {
        guard !json, !watch else { return }
        lines.append(.standardOutput(ServiceTypeWatcher.render(types, ours: type, seconds: elapsedSeconds, say: say)))
    }

    /// `--resolve`: the host's addresses, as avahi-resolve prints them (name, tab, address).
    public mutating func resolved(_ resolution: HostResolution) {
        if json {
            emit(Record(seconds: elapsed, resolution: resolution))
            return
        }
        for address in resolution.addresses { lines.append(.standardOutput("\(resolution.hostName)\t\(address)")) }
        lines.append(.standardError(String(format: "(resolved in %.0f ms)", resolution.seconds * 1_000)))
    }

    /// The lines produced since the last call, in order.
    public mutating func takeLines() -> [Line] {
        defer { lines.removeAll() }
        return lines
    }

    private var lines: [Line] = []

    private var elapsedSeconds: Double {
        (ContinuousClock.now - start).inSeconds
    }

    private var elapsed: Double { (elapsedSeconds * 1_000).rounded() / 1_000 }

    private var stamp: String { String(format: "%8.3fs", elapsedSeconds) }

    private mutating func emit(_ record: Record) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(record) else { return }
        lines.append(.standardOutput(String(decoding: data, as: UTF8.self)))
    }
}
