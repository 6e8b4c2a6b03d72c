/// The sessions the bridge dropped for retention (see ``SessionRetention``) and why, so a phone that resumes one is
/// told it was dropped rather than that it never existed.
///
/// Bounded: the oldest are forgotten past ``capacity`` (such a session then reads as unknown).
struct RetentionTombstones {
    /// The most dropped sessions remembered.
    static let capacity = 1024

    private struct Entry {
        let reason: RetentionReason
        /// Which insertion it was, so a stale slot in `order` (removed, or inserted again later) is told apart.
        let serial: UInt64
    }

    /// Why each remembered session was dropped.
    private var entries: [String: Entry] = [:]
    /// The insertions, oldest first, from `head` on (slots before it are already forgotten).
    private var order: [(session: String, serial: UInt64)] = []
    private var head = 0
    private var nextSerial: UInt64 = 0

    /// How many dropped sessions are remembered.
    var count: Int { entries.count }

    /// Why `session` was dropped, or `nil` if it was not (or is forgotten).
    func reason(for session: String) -> RetentionReason? {
        entries[session]?.reason
    }

    /// Remembers that `session` was dropped, forgetting the oldest past ``capacity``.
    mutating func insert(_ session: String, reason: RetentionReason) {
        nextSerial += 1
        entries[session] = Entry(reason: reason, serial: nextSerial)
        order.append((session, nextSerial))
        while entries.count > RetentionTombstones.capacity, head < order.count {
            let oldest = order[head]
            if entries[oldest.session]?.serial == oldest.serial { entries[oldest.session] = nil }
            head += 1
        }
        compact()
    }

    /// Forgets `session` (the agent uses its id again).
    mutating func remove(_ session: String) {
        entries[session] = nil
        compact()
    }

    /// Releases forgotten and stale slots once they are as many as the live ones (amortised constant time).
    private mutating func compact() {
        guard order.count - head > 2 * max(entries.count, 32) || (head >= 64 && head * 2 >= order.count) else { return }
        order = order[head...].filter { entries[$0.session]?.serial == $0.serial }
        head = 0
    }
}

/// Which bound dropped a session; the wire value names the bridge setting that changes it.
enum RetentionReason: String, Sendable {
    /// It was idle for ``SessionRetention/idleTimeout``.
    case idleTimeout = "idle_timeout"
    /// More than ``SessionRetention/maxIdleSessions`` sessions were idle.
    case maxIdleSessions = "max_idle_sessions"
    /// The idle sessions' replay buffers held more than ``SessionRetention/maxIdleReplayBytes``.
    case maxIdleReplayBytes = "max_idle_replay_bytes"

    /// The bridge's setting that changes the bound, in words with its config file key: the phone and the agent have
    /// no command line, so no flag is named (issue 31 item 5; the wire value in `data.reason` is the typed cause).
    var option: String {
        switch self {
        case .idleTimeout: "the idle session timeout in the bridge's settings (idle-session-timeout)"
        case .maxIdleSessions: "the most idle sessions in the bridge's settings (max-idle-sessions)"
        case .maxIdleReplayBytes: "the most idle replay bytes in the bridge's settings (max-idle-replay-bytes)"
        }
    }
}
