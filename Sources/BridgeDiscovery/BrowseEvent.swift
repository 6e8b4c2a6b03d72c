/// What a browser reports about the services of one type.
public enum BrowseEvent: Sendable, Hashable {
    /// A service appeared and was resolved for the first time.
    case added(ResolvedService)
    /// A known service changed: new TXT, port, host or addresses.
    case updated(ResolvedService)
    /// A service said goodbye or its records expired.
    case removed(ServiceInstance)
    /// The browser has reported what is cached now; more may come later (Avahi's ALL_FOR_NOW).
    case allForNow
    /// The daemon went away; the browser waits for it and carries on when it returns.
    case daemonUnavailable(reason: String)
    /// The daemon is back (after `daemonUnavailable`) and browsing restarted.
    case daemonAvailable
    /// Something failed; the message says what.
    case failure(DiscoveryError)
}

/// What an advertisement reports about itself.
public enum AdvertiseEvent: Sendable, Hashable {
    /// The service is registered under `name` and being announced.
    case registered(name: String)
    /// Another host holds the name; the service moves to `newName` (for example `Desk #2`).
    case collision(oldName: String, newName: String)
    /// The daemon went away; the advertisement waits for it and registers again when it returns.
    case daemonUnavailable(reason: String)
    /// Something failed; the message says what. Retries continue where they make sense.
    case failure(DiscoveryError)
}
