import BridgeHTTP
import HTTPTypes
import Synchronization

/// Counts open WebSocket connections against ``BridgeServerConfiguration/maxConnections``.
///
/// The check happens at the upgrade and the count changes when a connection starts and ends, so a burst of
/// simultaneous upgrades may briefly overshoot by the number of upgrades in flight; no slot is ever leaked by an
/// upgrade that fails half-way.
final class ConnectionSlots: Sendable {
    let limit: Int
    private let count = Mutex(0)

    init(limit: Int) {
        self.limit = limit
    }

    /// The open connections.
    var current: Int { count.withLock { $0 } }

    /// The 503 for an upgrade beyond the limit, or `nil` if there is room.
    func refusal() -> JSONErrorResponse? {
        guard current >= limit else { return nil }
        var headers = HTTPFields()
        headers[.retryAfter] = "5"
        return JSONErrorResponse(
            status: .serviceUnavailable, code: "too_many_connections",
            message: "The bridge already has \(limit) WebSocket connections, its limit (maxConnections); try again later.",
            extra: ["limit": limit], headers: headers)
    }

    /// A connection started; returns the open connections, this one included.
    func open() -> Int {
        count.withLock {
            $0 += 1
            return $0
        }
    }
    /// A connection ended.
    func close() { count.withLock { $0 -= 1 } }
}
