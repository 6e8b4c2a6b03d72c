/// Every address of one service probed, and the best outcome among them.
public struct ProbeReport: Sendable, Hashable, Codable {
    /// One attempt per address, in the order the addresses are preferred (IPv4, global IPv6, link-local IPv6).
    public var probes: [ProbeAttempt]

    /// Creates a report.
    public init(probes: [ProbeAttempt]) {
        self.probes = probes
    }

    /// The best attempt: the best outcome, and among equals the preferred address.
    public var best: ProbeAttempt? {
        probes.enumerated().min { ($0.element.outcome.rank, $0.offset) < ($1.element.outcome.rank, $1.offset) }?.element
    }
}
