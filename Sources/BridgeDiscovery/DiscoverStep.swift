/// A step `discover`'s advice points to (wait for a bridge, list every service type, keep discovery on).
///
/// The library says it in words; the command line names the command and flag (issue 31 item 5).
public enum DiscoverStep: Sendable, Hashable, CaseIterable {
    /// Watching the network until a bridge appears.
    case watch
    /// Browsing every service type on the network (does mDNS work at all?).
    case allTypes
    /// The bridge announcing itself (discovery on, its default).
    case discoveryOn

    /// The step in words, naming no flag: what the advice says when the caller adds nothing.
    public var words: String {
        switch self {
        case .watch: "watching the network waits for it"
        case .allTypes: "a browse of every service type on the network tells"
        case .discoveryOn: "its default"
        }
    }
}
