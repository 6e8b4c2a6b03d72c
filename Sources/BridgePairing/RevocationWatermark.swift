import Foundation

/// Where a revocation poll got to: the newest revocation time seen and what was already reported at exactly that
/// time, so each revocation found in the database is reported once and the memory kept stays bounded (not a set of
/// every revocation ever seen).
struct RevocationWatermark {
    /// Poll for revocations at or after this time.
    private(set) var since: Date
    /// Revocations already reported whose time is exactly ``since``.
    private var reportedAtSince: Set<TokenRevocation> = []

    init(since: Date) {
        self.since = since
    }

    /// The revocations among `rows` (revocation, when; at or after ``since``) not reported yet; moves the mark on.
    mutating func advance(with rows: [(TokenRevocation, Date)]) -> [TokenRevocation] {
        var fresh: [TokenRevocation] = []
        var newest = since
        for (revocation, date) in rows where date >= since {
            if date == since, reportedAtSince.contains(revocation) { continue }
            fresh.append(revocation)
            newest = max(newest, date)
        }
        if newest > since {
            since = newest
            reportedAtSince = Set(rows.filter { $0.1 == newest }.map(\.0))
        } else {
            reportedAtSince.formUnion(fresh)
        }
        return fresh
    }
}
