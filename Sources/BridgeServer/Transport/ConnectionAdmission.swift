import BridgeHTTP
import HTTPTypes
import Synchronization

/// Counts every accepted TCP connection, and per peer address the ones that are not WebSockets, and decides whether a
/// new connection may come in (see ``BridgeServerConfiguration/maxHTTPConnections`` and
/// ``BridgeServerConfiguration/maxPendingConnectionsPerAddress``).
///
/// "Pending" is from accept until the connection becomes a WebSocket (its `101`, which an authenticated upgrade
/// earns) or closes: plain HTTP, answered or not, counts toward its address for as long as it is open (issue 26.1: a
/// `404` to a request whose body then drips kept the connection but stopped counting it). That is what an
/// unauthenticated peer can hold open; ``ConnectionGuard`` bounds each of its requests in time. So one address holds
/// at most ``maxPendingPerAddress`` places, and the rest of ``maxAccepted`` stays for everyone else (a paired phone
/// on another address still connects while one address misbehaves).
final class ConnectionAdmission: Sendable {
    /// The most connections of every kind at once.
    let maxAccepted: Int
    /// The most connections from one address that are not WebSockets.
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

    /// How many addresses have connections that are not WebSockets (an address leaves the table with its last
    /// one, so the table never outgrows the connections open).
    var trackedAddresses: Int {
        state.withLock { $0.pending.count }
    }

    /// Connections open now, and those from `address` that are not WebSockets.
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

    /// The connection from `address` became a WebSocket: it no longer counts toward its address.
    func answered(_ address: String) {
        state.withLock { state in
            let left = state.pending[address, default: 1] - 1
            state.pending[address] = left > 0 ? left : nil
        }
    }

    /// The connection from `address` closed before it became a WebSocket.
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
                message: "This address already has \(maxPendingPerAddress) connections open that are not WebSockets "
                    + "(maxPendingConnectionsPerAddress); finish or close them, then try again.",
                extra: ["limit": maxPendingPerAddress], headers: headers)
        }
    }
}
