/// A DNS-SD service type such as `_openagents._tcp` (RFC 6763 §7).
public struct ServiceType: Sendable, Hashable, CustomStringConvertible {
    /// The type as DNS-SD writes it, for example `_openagents._tcp`.
    public let rawValue: String

    /// The service type the bridge advertises.
    public static let openAgents = ServiceType(uncheckedRawValue: "_openagents._tcp")

    /// Parses and validates a service type: `_name._tcp` or `_name._udp`, name 1–15 characters.
    public init(_ string: String) throws(DiscoveryError) {
        var text = string
        if text.hasSuffix(".") { text.removeLast() }
        if text.hasSuffix(".local") { text.removeLast(".local".count) }
        let labels = text.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count == 2,
              labels[0].hasPrefix("_"), (2...16).contains(labels[0].count),
              labels[1] == "_tcp" || labels[1] == "_udp",
              labels[0].dropFirst().allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") })
        else {
            throw .invalidServiceType(string)
        }
        self.rawValue = text
    }

    private init(uncheckedRawValue: String) {
        self.rawValue = uncheckedRawValue
    }

    /// The type as DNS-SD writes it, for example `_oa-bridge._tcp`.
    public var description: String { rawValue }
}
