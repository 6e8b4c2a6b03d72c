import HTTPTypes
import Synchronization

/// Counts every accepted TCP connection, and per peer address the ones still waiting for their first answer, and
/// decides whether a new connection may come in (see ``BridgeServerConfiguration/maxHTTPConnections`` and
/// ``BridgeServerConfiguration/maxPendingConnectionsPerAddress``).
///
/// "Waiting" is from accept until the bridge starts its first answer (any response, the WebSocket `101` included);
/// that is the phase an unauthenticated peer can hold open, and the one ``ConnectionGuard`` bounds in time.
final class ConnectionAdmission: Sendable {
    /// The most connections of every kind at once.
    let maxAccepted: Int
    /// The most connections from one address that wait for their first answer.
    let maxPendingPerAddress: Int
    private let state = Mutex(State())

    private struct State {
        var accepted = 0
        var pending: [String: Int] = [:]
    }

    /// Admission with room for `maxAccepted` connections, `maxPendingPerAddress` of them waiting per address.
    init(maxAccepted: Int, maxPendingPerAddress: Int) {
        self.maxAccepted = max(1, maxAccepted)
        self.maxPendingPerAddress = max(1, maxPendingPerAddress)
    }

    /// The admission for `configuration`: every accepted connection is bounded by the WebSocket limit plus the
    /// plain-HTTP allowance.
    convenience init(for configuration: BridgeServerConfiguration) {
        self.init(
            maxAccepted: configuration.maxConnections + configuration.maxHTTPConnections,
            maxPendingPerAddress: configuration.maxPendingConnectionsPerAddress)
    }

    /// How many addresses have connections waiting for their first answer (an address leaves the table with its last
    /// one, so the table never outgrows the connections open).
    var trackedAddresses: Int {
        state.withLock { $0.pending.count }
    }

    /// Connections open now, and those waiting for a first answer from `address`.
    func counts(for address: String) -> (accepted: Int, pending: Int) {
        state.withLock { ($0.accepted, $0.pending[address, default: 0]) }
    }

    /// Takes a place for a new connection from `address`, or returns the 503 to answer it with. A `nil` return must be
    /// matched by ``answered(_:)`` or ``abandoned(_:)`` once, and by ``closed()`` when the connection ends.
    func admit(_ address: String) -> JSONErrorResponse? {
        let refusal: Refusal? = state.withLock { state in
            if state.accepted >= maxAccepted { return .full }
            if state.pending[address, default: 0] >= maxPendingPerAddress { return .address }
            state.accepted += 1
            state.pending[address, default: 0] += 1
            return nil
        }
        return refusal.map(response)
    }

    /// The connection from `address` got its first answer: it no longer counts as waiting.
    func answered(_ address: String) {
        state.withLock { state in
            let left = state.pending[address, default: 1] - 1
            state.pending[address] = left > 0 ? left : nil
        }
    }

    /// The connection from `address` went away before its first answer.
    func abandoned(_ address: String) {
        answered(address)
    }

    /// An admitted connection closed.
    func closed() {
        state.withLock { $0.accepted = max(0, $0.accepted - 1) }
    }

    private enum Refusal {
        case full, address
    }

    private func response(_ refusal: Refusal) -> JSONErrorResponse {
        var headers = HTTPFields()
        headers[.retryAfter] = "5"
        switch refusal {
        case .full:
            return JSONErrorResponse(
                status: .serviceUnavailable, code: "server_busy",
                message: "The bridge already has \(maxAccepted) connections open, its limit (maxConnections plus "
                    + "maxHTTPConnections); try again later.",
                extra: ["limit": maxAccepted], headers: headers)
        case .address:
            return JSONErrorResponse(
                status: .serviceUnavailable, code: "too_many_pending_connections",
                message: "This address already has \(maxPendingPerAddress) connections that have not sent a complete "
                    + "request (maxPendingConnectionsPerAddress); finish or close them, then try again.",
                extra: ["limit": maxPendingPerAddress], headers: headers)
        }
    }
}
