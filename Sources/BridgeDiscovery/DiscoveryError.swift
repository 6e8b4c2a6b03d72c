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
        }
    }
}
