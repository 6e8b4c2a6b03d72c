import BridgeClient
import BridgeDiscovery
import Foundation

/// Prints what `discover` sees, as text or one JSON object per line, and remembers the services.
actor DiscoverOutput {
    private let json: Bool
    private let watch: Bool
    private let probe: Bool
    private let type: ServiceType
    private let start = ContinuousClock.now
    private var services: [ServiceInstance: DiscoverSession.Found] = [:]
    private var order: [ServiceInstance] = []
    private var sawAllForNow = false
    private var lastEvent = ContinuousClock.now

    init(json: Bool, watch: Bool, probe: Bool, type: ServiceType) {
        self.json = json
        self.watch = watch
        self.probe = probe
        self.type = type
    }

    /// The services present now, in the order they were found.
    func snapshot() -> [DiscoverSession.Found] {
        order.compactMap { services[$0] }
    }

    /// Whether ALL_FOR_NOW came and nothing else happened for `quiet`.
    func isSettled(quietFor quiet: Duration) -> Bool {
        sawAllForNow && ContinuousClock.now - lastEvent >= quiet
    }

    func show(_ service: ResolvedService, probe result: HandshakeProbe.Result?, isNew: Bool) {
        lastEvent = .now
        if services[service.instance] == nil { order.append(service.instance) }
        services[service.instance] = DiscoverSession.Found(service: service, probe: result)
        if json {
            emit(DiscoverRecord(event: isNew ? "added" : "updated", seconds: elapsed, service: service, probe: result))
        } else if watch {
            let mark = isNew ? "+" : "~"
            print("\(stamp) \(mark) \(isNew ? "added  " : "updated") \(DiscoverTable.summary(service, probe: result))")
        }
    }

    func removed(_ instance: ServiceInstance) {
        lastEvent = .now
        services.removeValue(forKey: instance)
        order.removeAll { $0 == instance }
        if json {
            emit(DiscoverRecord(event: "removed", seconds: elapsed, instance: instance))
        } else if watch {
            print("\(stamp) - removed \(instance.name)")
        }
    }

    func allForNow() {
        sawAllForNow = true
        if json {
            emit(DiscoverRecord(event: "all_for_now", seconds: elapsed))
        } else if watch {
            print("\(stamp)   (the daemon has reported every cached instance; waiting for more)")
        }
    }

    func daemonUnavailable(reason: String, backend: BackendKind?) {
        lastEvent = .now
        if json {
            emit(DiscoverRecord(event: "daemon_unavailable", seconds: elapsed, message: reason))
        }
        let hint = DiscoverOutput.daemonHint(backend: backend)
        let line = "discovery unavailable: \(reason).\n\(hint)\n"
        FileHandle.standardError.write(Data(line.utf8))
    }

    func daemonAvailable() {
        lastEvent = .now
        if json {
            emit(DiscoverRecord(event: "daemon_available", seconds: elapsed))
        } else {
            FileHandle.standardError.write(Data("the mDNS daemon is back; browsing again\n".utf8))
        }
    }

    func failure(_ error: DiscoveryError) {
        if json {
            emit(DiscoverRecord(event: "error", seconds: elapsed, message: error.description))
        }
        FileHandle.standardError.write(Data("warning: \(error)\n".utf8))
    }

    /// One-shot: the table, or why nothing was found.
    func finish(services found: [DiscoverSession.Found], timeout: Double) {
        guard !json, !watch else { return }
        if found.isEmpty {
            print("""
            No \(type) services found within \(String(format: "%.1f", elapsedSeconds)) s.
            - Is 'oa-bridge serve' running on the desktop? ('oa-bridge discover --watch' waits for it.)
            - Are both devices on the same network? Guest Wi-Fi, VPNs and some firewalls block mDNS \
            (UDP 5353 to 224.0.0.251 / ff02::fb).
            - Without multicast, connect by address instead: ws://HOST:9099/ or the desktop's Tailscale name.
            """)
            return
        }
        print(DiscoverTable.render(found, probe: probe))
    }

    /// How to get the daemon going.
    static func daemonHint(backend: BackendKind?) -> String {
        """
        Start the daemon with 'sudo systemctl start avahi-daemon' (Debian: 'sudo apt-get install avahi-daemon'); \
        it needs the D-Bus system bus ('sudo systemctl start dbus'). In a container without systemd: \
        'dbus-daemon --system && avahi-daemon -D'.
        """
    }

    private var elapsedSeconds: Double {
        (ContinuousClock.now - start).inSeconds
    }

    private var elapsed: Double { (elapsedSeconds * 1_000).rounded() / 1_000 }

    private var stamp: String { String(format: "%8.3fs", elapsedSeconds) }

    private func emit(_ record: DiscoverRecord) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(record) else { return }
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }
}
