/// What both mDNS browsers (Avahi's and dns_sd's) share once they have merged an instance's sightings: which
/// instances were announced and as what, when each was first seen, which are being resolved again after the daemon
/// came back, and which of those never came back.
///
/// It turns the backends' merged reports into `added` / `updated` / `removed` events.
///
/// A value type with no clock or thread of its own: each backend keeps one on its event-loop thread and passes the
/// time in, so it is tested without a daemon.
struct BrowseAggregator: Sendable {
    /// What was last reported for each instance.
    private var announced: [ServiceInstance: ResolvedService] = [:]
    /// When each instance was first sighted in this browse, for ``ResolvedService/resolveSeconds``.
    private var firstSeen: [ServiceInstance: ContinuousClock.Instant] = [:]
    /// Announced before a daemon outage and not reported since.
    private var reresolving: Set<ServiceInstance> = []

    /// Whether `instance` has been reported (and not removed).
    func isAnnounced(_ instance: ServiceInstance) -> Bool { announced[instance] != nil }

    /// Whether any instance has been reported.
    var hasAnnounced: Bool { !announced.isEmpty }

    /// The instances reported so far.
    var announcedInstances: Set<ServiceInstance> { Set(announced.keys) }

    /// Whether `instance` was announced before the daemon went away and has not been reported since.
    func isReresolving(_ instance: ServiceInstance) -> Bool { reresolving.contains(instance) }

    /// Whether the next report of `instance` is a first one: never announced, or being resolved again after an outage
    /// (backends wait for its addresses before reporting it then).
    func awaitsFirstReport(_ instance: ServiceInstance) -> Bool {
        announced[instance] == nil || reresolving.contains(instance)
    }

    /// A browse saw `instance` (on some interface and protocol) at `now`; the first sighting starts its resolve time.
    mutating func sighted(_ instance: ServiceInstance, at now: ContinuousClock.Instant) {
        if firstSeen[instance] == nil { firstSeen[instance] = now }
    }

    /// Ends the re-resolving state of `instance`; returns whether it was in it.
    @discardableResult
    mutating func endReresolving(_ instance: ServiceInstance) -> Bool {
        reresolving.remove(instance) != nil
    }

    /// Whether reporting `service` would tell callers something new (its resolve time does not count).
    func changes(_ service: ResolvedService) -> Bool {
        guard var previous = announced[service.instance] else { return true }
        previous.resolveSeconds = service.resolveSeconds
        return previous != service
    }

    /// Records the merged state of an instance at `now`: `added` the first time (with the time since it was first
    /// sighted), `updated` when it differs from what was reported, `nil` when nothing changed.
    mutating func report(_ service: ResolvedService, at now: ContinuousClock.Instant) -> BrowseEvent? {
        var service = service
        let instance = service.instance
        reresolving.remove(instance)
        if let previous = announced[instance] {
            service.resolveSeconds = previous.resolveSeconds
            guard previous != service else { return nil }
            announced[instance] = service
            return .updated(service)
        }
        if let seen = firstSeen[instance] {
            service.resolveSeconds = (now - seen).inSeconds
        }
        announced[instance] = service
        return .added(service)
    }

    /// No sighting of `instance` is left: forgets it, and returns `removed` if it had been reported.
    mutating func gone(_ instance: ServiceInstance) -> BrowseEvent? {
        firstSeen.removeValue(forKey: instance)
        reresolving.remove(instance)
        return announced.removeValue(forKey: instance) != nil ? .removed(instance) : nil
    }

    /// The daemon is back: everything announced is resolved again.
    ///
    /// Returns those instances, to be checked with ``dropStale(_:seen:)`` once the new browse has settled.
    mutating func daemonReturned() -> Set<ServiceInstance> {
        reresolving = Set(announced.keys)
        return reresolving
    }

    /// Removes the instances of `stale` the new browse has not `seen`, returning a `removed` for each that had been
    /// reported (by name, for a stable order).
    mutating func dropStale(_ stale: Set<ServiceInstance>, seen: Set<ServiceInstance>) -> [BrowseEvent] {
        stale.subtracting(seen)
            .sorted { ($0.name, $0.type, $0.domain) < ($1.name, $1.type, $1.domain) }
            .compactMap { instance in announced[instance] == nil ? nil : gone(instance) }
    }
}
