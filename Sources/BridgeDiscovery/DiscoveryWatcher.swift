/// What `discover` reports about a browse, once ``DiscoveryWatcher`` has read it.
public enum WatchEvent: Sendable, Hashable {
    /// A service appeared.
    case added(ResolvedService)
    /// A known service changed; `diff` says how (TXT keys, host, port, addresses).
    case updated(ResolvedService, diff: ServiceDiff)
    /// A service went.
    case removed(ServiceInstance)
    /// A naming problem was found (reported once).
    case conflict(DiscoveryConflict)
    /// The daemon has reported everything it had cached.
    case allForNow
    /// The daemon cannot be reached.
    case daemonUnavailable(reason: String)
    /// The daemon is back.
    case daemonAvailable
    /// Something failed.
    case failure(DiscoveryError)
}

/// The state behind `oa-bridge discover`: which services are present (in the order found), what changed in each
/// update, naming conflicts, and whether the browse has settled.
///
/// A value type with no clock or thread of its own: callers pass the time in, so it is tested without a daemon.
public struct DiscoveryWatcher: Sendable {
    private var services: [ServiceInstance: ResolvedService] = [:]
    private var order: [ServiceInstance] = []
    private var sawAllForNow = false
    private var lastEvent: ContinuousClock.Instant?
    /// Every host seen answering for each instance, in order.
    private var hostsByInstance: [ServiceInstance: [String]] = [:]
    /// Instance names seen per (type, base name, host), in order, for renames.
    private var namesByBase: [RenameKey: [String]] = [:]
    /// The host each name was last seen on (also after it went), per type.
    private var lastHost: [ServiceInstance: String] = [:]
    private var reported: Set<DiscoveryConflict> = []

    private struct RenameKey: Hashable {
        var type: String
        var base: String
        var host: String
    }

    /// How many renames of one host's service make ``DiscoveryConflict/keepsRenaming(base:host:names:)``.
    public static let renamesThatKeepGoing = 2

    /// Creates an empty watcher for a browse started at `start`: a browse is not settled until it has been quiet
    /// for a while, counted from its start when nothing has happened yet.
    public init(startedAt start: ContinuousClock.Instant = .now) {
        lastEvent = start
    }

    /// Something is under way at `now` (say a sighting being probed before it is applied): settling waits for it.
    public mutating func touch(at now: ContinuousClock.Instant) {
        lastEvent = now
    }

    /// The services present now, in the order they were found.
    public var present: [ResolvedService] { order.compactMap { services[$0] } }

    /// Every conflict reported so far.
    public var conflicts: [DiscoveryConflict] { Array(reported) }

    /// Whether the daemon has reported everything and nothing happened for `quiet` before `now`.
    public func isSettled(at now: ContinuousClock.Instant, quietFor quiet: Duration) -> Bool {
        guard sawAllForNow else { return false }
        guard let lastEvent else { return true }
        return now - lastEvent >= quiet
    }

    /// Reads one browse event at `now`; returns what to report (the event itself, with diffs, plus any new conflict).
    public mutating func apply(_ event: BrowseEvent, at now: ContinuousClock.Instant) -> [WatchEvent] {
        switch event {
        case .added(let service), .updated(let service):
            lastEvent = now
            let previous = services[service.instance]
            if previous == nil { order.append(service.instance) }
            services[service.instance] = service
            var out: [WatchEvent]
            if let previous {
                out = [.updated(service, diff: ServiceDiff(old: previous, new: service))]
            } else {
                out = [.added(service)]
            }
            out += conflicts(after: service)
            return out
        case .removed(let instance):
            lastEvent = now
            services.removeValue(forKey: instance)
            order.removeAll { $0 == instance }
            return [.removed(instance)]
        case .allForNow:
            sawAllForNow = true
            return [.allForNow]
        case .daemonUnavailable(let reason):
            lastEvent = now
            return [.daemonUnavailable(reason: reason)]
        case .daemonAvailable:
            lastEvent = now
            return [.daemonAvailable]
        case .failure(let error):
            return [.failure(error)]
        }
    }

    /// New conflicts that `service` (just added or updated) reveals.
    private mutating func conflicts(after service: ResolvedService) -> [WatchEvent] {
        var found: [DiscoveryConflict] = []
        let instance = service.instance
        let host = service.hostName.lowercased()
        lastHost[instance] = host
        // One name, several hosts.
        var hosts = hostsByInstance[instance, default: []]
        if !hosts.contains(host) {
            hosts.append(host)
            hostsByInstance[instance] = hosts
            if hosts.count >= 2 { found.append(.sharedName(instance: instance, hosts: hosts)) }
        }
        // Renames: `Desk #2` beside `Desk`, and a host whose name keeps moving.
        let base = DiscoveryConflict.renamedBase(of: instance.name)?.base ?? instance.name
        let key = RenameKey(type: instance.type, base: base, host: host)
        var names = namesByBase[key, default: []]
        if !names.contains(instance.name) {
            names.append(instance.name)
            namesByBase[key] = names
            if names.count == DiscoveryWatcher.renamesThatKeepGoing + 1 {
                found.append(.keepsRenaming(base: base, host: host, names: names))
            }
        }
        if base != instance.name {
            let original = ServiceInstance(name: base, type: instance.type, domain: instance.domain)
            if let originalHost = services[original]?.hostName.lowercased() ?? lastHost[original] {
                found.append(.renamedAfterCollision(original: base, renamed: instance, originalHost: originalHost, renamedHost: host))
            }
        } else {
            // The original came (back) after its renamed twin: same conflict, seen from the other side.
            for (other, otherService) in services where other.type == instance.type && other != instance {
                guard DiscoveryConflict.renamedBase(of: other.name)?.base == base else { continue }
                found.append(.renamedAfterCollision(original: base, renamed: other, originalHost: host,
                                                    renamedHost: otherService.hostName.lowercased()))
            }
        }
        var out: [WatchEvent] = []
        for conflict in found where reported.insert(conflict).inserted {
            out.append(.conflict(conflict))
        }
        return out
    }
}
