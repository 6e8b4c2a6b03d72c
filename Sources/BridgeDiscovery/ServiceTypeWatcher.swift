import Foundation

/// The state and the text of `discover --all`: the service types present (in the order found), whether the browse
/// has settled, and the verdict a person needs.
///
/// A value type; callers pass the time in.
public struct ServiceTypeWatcher: Sendable {
    private var types: [ServiceTypeSighting] = []
    private var sawAllForNow = false
    private var lastEvent: ContinuousClock.Instant?

    /// Creates an empty watcher for a browse started at `start` (quiet is counted from it until something comes).
    public init(startedAt start: ContinuousClock.Instant = .now) {
        lastEvent = start
    }

    /// The types present now, in the order found.
    public var present: [ServiceTypeSighting] { types }

    /// Reads one event at `now`.
    public mutating func apply(_ event: ServiceTypeEvent, at now: ContinuousClock.Instant) {
        switch event {
        case .added(let sighting):
            lastEvent = now
            if !types.contains(sighting) { types.append(sighting) }
        case .removed(let sighting):
            lastEvent = now
            types.removeAll { $0 == sighting }
        case .allForNow:
            sawAllForNow = true
        case .daemonUnavailable, .failure:
            break
        }
    }

    /// Whether the daemon has reported everything and nothing changed for `quiet` before `now`.
    public func isSettled(at now: ContinuousClock.Instant, quietFor quiet: Duration) -> Bool {
        guard sawAllForNow else { return false }
        guard let lastEvent else { return true }
        return now - lastEvent >= quiet
    }

    /// Every service type as a table (type, interfaces), then which case this is: no mDNS at all, mDNS without
    /// `ours`, or `ours` among them; `seconds` is how long the browse ran; `say` words a ``DiscoverStep`` (the command
    /// line names its flag; by default ``DiscoverStep/words``).
    public static func render(_ types: [ServiceTypeSighting], ours: ServiceType, seconds: Double,
                              say: (DiscoverStep) -> String = \.words) -> String {
        let within = String(format: "%.1f", seconds)
        guard !types.isEmpty else {
            return """
            No mDNS service types at all within \(within) s: mDNS itself is not getting through here.
            - Run 'oa-bridge doctor': it checks the daemon, multicast on each interface and publishes a test service.
            - Guest Wi-Fi, VPNs, client isolation and firewalls block mDNS (UDP 5353 to 224.0.0.251 / ff02::fb).
            """
        }
        var byType: [String: Set<String>] = [:]
        for sighting in types { byType[sighting.type, default: []].insert(sighting.interface ?? "?") }
        let names = byType.keys.sorted()
        let width = max(4, names.map(\.count).max() ?? 0)
        var lines = ["TYPE".padding(toLength: width, withPad: " ", startingAt: 0) + "  INTERFACES"]
        for name in names {
            lines.append(name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + (byType[name] ?? []).sorted().joined(separator: ","))
        }
        if byType[ours.rawValue] != nil {
            lines.append("mDNS works: \(names.count) service type(s), \(ours) among them ('oa-bridge discover' lists the bridges).")
        } else {
            lines.append("mDNS works (\(names.count) service type(s) seen) but no \(ours): no bridge is announcing on this network. "
                + "Start 'oa-bridge serve' on the desktop, or check it runs with discovery on (\(say(.discoveryOn))) and on this network's interface.")
        }
        return lines.joined(separator: "\n")
    }
}
