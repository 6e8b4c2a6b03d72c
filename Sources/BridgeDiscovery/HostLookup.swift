import Synchronization

/// What a backend's host-name lookup reports, before ``HostLookup/collect(_:hostName:timeout:)`` turns it into
/// a ``HostResolution``.
enum HostLookupEvent: Sendable {
    /// An address of the host.
    case address(ServiceAddress)
    /// One address family's lookup ended (answered for good, failed or timed out).
    case familyDone
    /// The daemon cannot be reached.
    case daemonUnavailable(String)
}

/// Gathers a host-name lookup's answers, bounded in time; shared by both backends and tested without a daemon.
enum HostLookup {
    /// Once one address has come, how long to wait for the other family.
    static let otherFamilyWait: Duration = .milliseconds(600)

    /// Reads `events` until both families are done, `otherFamilyWait` after the first address, or `timeout`.
    static func collect(_ events: AsyncStream<HostLookupEvent>, hostName: String, timeout: Duration) async throws(DiscoveryError) -> HostResolution {
        let clock = ContinuousClock()
        let start = clock.now
        let state = ProgressBox()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in events {
                    let finished = state.value.withLock { progress in
                        progress.add(event, at: clock.now - start)
                        return progress.isComplete
                    }
                    if finished { break }
                }
                state.value.withLock { $0.streamEnded = true }
            }
            // Bounded: at most timeout / 25 ms rounds.
            while clock.now - start < timeout {
                let done = state.value.withLock { progress in
                    progress.isComplete || progress.streamEnded
                        || progress.firstAnswer.map { clock.now - start - $0 >= otherFamilyWait } ?? false
                }
                if done { break }
                try? await Task.sleep(for: .milliseconds(25))
            }
            group.cancelAll()
        }
        let progress = state.value.withLock { $0 }
        if let unavailable = progress.unavailable, progress.addresses.isEmpty { throw .daemonUnavailable(reason: unavailable) }
        guard !progress.addresses.isEmpty else { throw .hostNotFound(name: hostName, seconds: timeout.inSeconds) }
        return HostResolution(hostName: hostName, addresses: sorted(progress.addresses), seconds: (progress.firstAnswer ?? .zero).inSeconds)
    }

    /// A ``Progress`` shared between the reading task and the waiting one.
    final class ProgressBox: Sendable {
        let value = Mutex(Progress())
    }

    /// What the lookup has said so far.
    struct Progress: Sendable {
        var addresses: [ServiceAddress] = []
        var firstAnswer: Duration?
        var familiesDone = 0
        var unavailable: String?
        var streamEnded = false

        mutating func add(_ event: HostLookupEvent, at elapsed: Duration) {
            switch event {
            case .address(let address):
                if firstAnswer == nil { firstAnswer = elapsed }
                if !addresses.contains(address) { addresses.append(address) }
            case .familyDone:
                familiesDone += 1
            case .daemonUnavailable(let reason):
                unavailable = reason
            }
        }

        /// Both families are done, or the daemon is gone.
        var isComplete: Bool { familiesDone >= 2 || unavailable != nil }
    }

    /// IPv4 first, then routable IPv6, then link-local.
    static func sorted(_ addresses: [ServiceAddress]) -> [ServiceAddress] {
        addresses.sorted { a, b in
            ((a.family == .ipv4 ? 0 : a.isLinkLocal ? 2 : 1), a.ip) < ((b.family == .ipv4 ? 0 : b.isLinkLocal ? 2 : 1), b.ip)
        }
    }
}
