import BridgeClient
import BridgeDiagnostics
import BridgeDiscovery
import Foundation

/// Prints what `discover` sees, as text or one JSON object per line. The state is the library's
/// ``DiscoveryWatcher``; this keeps only the probe results beside it.
actor DiscoverOutput {
    private let json: Bool
    private let watch: Bool
    private let probe: Bool
    private let type: ServiceType
    private let start = ContinuousClock.now
    private var watcher = DiscoveryWatcher()
    private var probes: [ServiceInstance: HandshakeProbe.Result] = [:]
    /// Conflicts found in a one-shot browse, printed under the table.
    private var conflicts: [DiscoveryConflict] = []

    init(json: Bool, watch: Bool, probe: Bool, type: ServiceType) {
        self.json = json
        self.watch = watch
        self.probe = probe
        self.type = type
    }

    /// The services present now, in the order they were found.
    func snapshot() -> [DiscoverSession.Found] {
        watcher.present.map { DiscoverSession.Found(service: $0, probe: probes[$0.instance]) }
    }

    /// Whether the daemon has said everything and nothing happened for 400 ms.
    func isSettled() -> Bool {
        watcher.isSettled(at: .now, quietFor: .milliseconds(400))
    }

    /// An event arrived and is being probed: the browse is not settled meanwhile.
    func noteActivity() {
        watcher.touch(at: .now)
    }

    /// Reads one browse event (with its probe result) and prints what it means.
    func handle(_ event: BrowseEvent, probe result: HandshakeProbe.Result?) {
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

    private func show(_ change: WatchEvent) {
        switch change {
        case .added(let service):
            let result = probes[service.instance]
            if json {
                emit(DiscoverRecord(event: "added", seconds: elapsed, service: service, probe: result.map(DiscoveryProbeJSON.init)))
            } else if watch {
                say("\(stamp) + added   \(DiscoveryText.summary(service, probe: result))")
            }
        case .updated(let service, let diff):
            let result = probes[service.instance]
            if json {
                emit(DiscoverRecord(event: "updated", seconds: elapsed, service: service, probe: result.map(DiscoveryProbeJSON.init), diff: diff))
            } else if watch {
                say("\(stamp) ~ updated \(DiscoveryText.summary(service, probe: result))")
                for line in diff.lines { say("            \(line)") }
            }
        case .removed(let instance):
            if json {
                emit(DiscoverRecord(event: "removed", seconds: elapsed, instance: instance))
            } else if watch {
                say("\(stamp) - removed \(instance.name)")
            }
        case .conflict(let conflict):
            if json {
                emit(DiscoverRecord(seconds: elapsed, conflict: conflict))
            } else if watch {
                say("\(stamp) ! \(conflict.text)")
            } else {
                conflicts.append(conflict)
            }
        case .allForNow:
            if json {
                emit(DiscoverRecord(event: "all_for_now", seconds: elapsed))
            } else if watch {
                say("\(stamp)   (the daemon has reported every cached instance; waiting for more)")
            }
        case .daemonUnavailable(let reason):
            daemonUnavailable(reason: reason, backend: nil)
        case .daemonAvailable:
            if json {
                emit(DiscoverRecord(event: "daemon_available", seconds: elapsed))
            } else {
                FileHandle.standardError.write(Data("the mDNS daemon is back; browsing again\n".utf8))
            }
        case .failure(let error):
            if json {
                emit(DiscoverRecord(event: "error", seconds: elapsed, message: error.description))
            }
            FileHandle.standardError.write(Data("warning: \(error)\n".utf8))
        }
    }

    func daemonUnavailable(reason: String, backend: BackendKind?) {
        if json {
            emit(DiscoverRecord(event: "daemon_unavailable", seconds: elapsed, message: reason))
        }
        let line = "discovery unavailable: \(reason).\n\(DiscoveryText.daemonHint)\n"
        FileHandle.standardError.write(Data(line.utf8))
    }

    /// One-shot: the table, or why nothing was found, then any conflicts with their fixes.
    func finish(services found: [DiscoverSession.Found], timeout: Double) {
        guard !json, !watch else { return }
        print(found.isEmpty ? DiscoveryText.nothingFound(type: type, seconds: elapsedSeconds) : DiscoveryText.table(found, probe: probe))
        for conflict in conflicts { print(conflict.text) }
    }

    /// `--all`: the types present and whether their browse has settled.
    private var types = ServiceTypeWatcher()

    /// The service types present now, in the order found.
    func presentTypes() -> [ServiceTypeSighting] { types.present }

    /// Whether the type browse has settled (ALL_FOR_NOW, then 400 ms quiet).
    func typesSettled() -> Bool { types.isSettled(at: .now, quietFor: .milliseconds(400)) }

    /// `--all`: one service type came or went.
    func typeEvent(_ event: ServiceTypeEvent) {
        types.apply(event, at: .now)
        switch event {
        case .added(let sighting):
            if json { emit(DiscoverRecord(event: "type_added", seconds: elapsed, sighting: sighting)) }
            else if watch { say("\(stamp) + \(sighting.type) on \(sighting.interface ?? "?")") }
        case .removed(let sighting):
            if json { emit(DiscoverRecord(event: "type_removed", seconds: elapsed, sighting: sighting)) }
            else if watch { say("\(stamp) - \(sighting.type) on \(sighting.interface ?? "?")") }
        case .allForNow:
            if json { emit(DiscoverRecord(event: "all_for_now", seconds: elapsed)) }
        case .daemonUnavailable(let reason):
            daemonUnavailable(reason: reason, backend: nil)
        case .failure(let error):
            if json { emit(DiscoverRecord(event: "error", seconds: elapsed, message: error.description)) }
            FileHandle.standardError.write(Data("warning: \(error)\n".utf8))
        }
    }

    /// `--all`, one-shot: the types as a table and what they say about mDNS here.
    func finishTypes(_ types: [ServiceTypeSighting]) {
        guard !json, !watch else { return }
        print(ServiceTypeWatcher.render(types, ours: type, seconds: elapsedSeconds))
    }

    /// `--resolve`: the host's addresses, as avahi-resolve prints them (name, tab, address).
    func resolved(_ resolution: HostResolution) {
        if json {
            emit(DiscoverRecord(seconds: elapsed, resolution: resolution))
            return
        }
        for address in resolution.addresses { print("\(resolution.hostName)\t\(address)") }
        FileHandle.standardError.write(Data(String(format: "(resolved in %.0f ms)\n", resolution.seconds * 1_000).utf8))
    }

    private var elapsedSeconds: Double {
        (ContinuousClock.now - start).inSeconds
    }

    private var elapsed: Double { (elapsedSeconds * 1_000).rounded() / 1_000 }

    private var stamp: String { String(format: "%8.3fs", elapsedSeconds) }

    /// Writes a live line unbuffered: print() to a pipe or file is block-buffered, and `--watch | grep` must see
    /// each line when it happens.
    private func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    private func emit(_ record: DiscoverRecord) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(record) else { return }
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }
}
