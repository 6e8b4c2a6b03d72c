import Foundation

/// Errors from advertising or browsing, each with a message a user can act on.
public enum DiscoveryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The mDNS daemon (avahi-daemon) or the D-Bus system bus cannot be reached.
    case daemonUnavailable(reason: String)
    /// The service type is not of the form `_name._tcp`.
    case invalidServiceType(String)
    /// A TXT record could not be encoded or decoded.
    case invalidTXT(String)
    /// The instance name is empty or longer than 63 bytes.
    case invalidServiceName(String)
    /// The backend reported a failure; `operation` says what it was doing.
    case backendFailure(operation: String, message: String)
    /// The requested backend is not available in this build or on this platform.
    case backendUnavailable(String)
    /// No network interface has this name (for `--interface`).
    case unknownInterface(String)
    /// No mDNS host answered for this name within the time given.
    case hostNotFound(name: String, seconds: Double)

    /// What failed and how to fix it (start the daemon, write the service type as `_name._tcp`, ...).
    public var description: String {
        switch self {
        case .daemonUnavailable(let reason):
            return "mDNS daemon unavailable: \(reason). Start it with 'sudo systemctl start avahi-daemon' (it needs the D-Bus system bus: 'sudo systemctl start dbus')."
        case .invalidServiceType(let type):
            return "'\(type)' is not a DNS-SD service type; write it as _name._tcp (for example _openagents._tcp)."
        case .invalidTXT(let message):
            return "invalid TXT record: \(message)"
        case .invalidServiceName(let name):
            return "invalid service name '\(name)': it must be 1 to 63 bytes of UTF-8."
        case .backendFailure(let operation, let message):
            return "\(operation) failed: \(message)"
        case .backendUnavailable(let message):
            return message
        case .unknownInterface(let name):
            return "there is no network interface '\(name)'; list them with 'ip link' (Linux) or 'ifconfig -l' (macOS) and choose one of those names."
        case .hostNotFound(let name, let seconds):
            return "no mDNS host answered for '\(name)' within \(String(format: "%.1f", seconds)) s. Check the name (the part before .local is the other machine's host name, see 'hostname' there), that its avahi-daemon runs, and that both machines share a network that passes multicast (UDP 5353)."
        }
    }
}
