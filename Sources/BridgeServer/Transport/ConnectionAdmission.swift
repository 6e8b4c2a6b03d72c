import BridgeHTTP
import HTTPTypes
import Synchronization

/// Counts every accepted TCP connection, and per peer address the ones that are not WebSockets, and decides whether a
/// new connection may come in (see ``BridgeServerConfiguration/maxHTTPConnections`` and
/// ``BridgeServerConfiguration/maxPendingConnectionsPerAddress``).
///
/// "Pending" (unauthenticated) is from accept until the connection becomes a WebSocket (its `101`, which an
/// authenticated upgrade earns) or closes: plain HTTP, answered or not, counts toward its address for as long as it is
/// open (issue 26.1: a `404` to a request whose body then drips kept the connection but stopped counting it).
/// ``ConnectionGuard`` bounds each of its requests in time. Three bounds keep places that such traffic cannot take:
///
/// - one address holds at most ``maxPendingPerAddress`` pending connections (one more gets
///   `503 too_many_pending_connections`);
/// - all addresses together hold at most ``maxPending`` (the plain-HTTP allowance): the rest of ``maxAccepted`` is for
///   WebSockets, which only an upgrade the bridge accepts (a paired device's token, or an allowed network with
///   `--auth none`) reaches;
/// - when the pending places are all taken, a connection from an address that holds fewer than ``probationShare``
///   of them (an address under its share: a phone, not the addresses flooding) is let in "on probation", into a
///   reserve of ``reserve`` places: its first request must be a WebSocket upgrade, within
///   ``ConnectionGuard/probationTimeout``; anything else gets `503 server_busy` (``HTTPEdgeHandler``). So a paired
///   phone still connects while other addresses hold every place unauthenticated traffic may hold.
final class ConnectionAdmission: Sendable {
    /// What ``admit(_:)`` decided for a new connection.
    enum Decision {
        /// In, on one of the pending places.
        case admitted
        /// In, on a reserve place: its first request must be a WebSocket upgrade (see the type's documentation).
        case probation
        /// Not in: answer it with this `503` and close it.
        case refused(JSONErrorResponse)

        /// The `503` of a refusal; `nil` when the connection is in.
        var refusal: JSONErrorResponse? {
            if case .refused(let response) = self { return response }
            return nil
        }

        /// In on a reserve place.
        var isProbation: Bool {
            if case .probation = self { return true }
            return false
        }
    }

    /// The most connections of every kind at once.
    let maxAccepted: Int
    /// The most connections from one address that are not WebSockets.
    let maxPendingPerAddress: Int
    /// The most connections from all addresses together that are not WebSockets (reserve places aside).
    let maxPending: Int
    /// Places beyond ``maxPending`` for connections on probation.
    let reserve: Int
    /// An address holding fewer pending connections than this may use the reserve.
    static let probationShare = 2
    private let state = Mutex(State())

    private struct State {
        var accepted = 0
        /// Pending connections, reserve places included.
        var pending: [String: Int] = [:]
        /// Pending connections on the ordinary places.
        var pendingTotal = 0
        /// Connections on reserve places.
        var probation = 0
    }

    /// Admission with room for `maxAccepted` connections, `maxPendingPerAddress` of them waiting per address,
    /// `maxPending` waiting in all (all of `maxAccepted` when `nil`), and `reserve` places on probation beyond them.
    init(maxAccepted: Int, maxPendingPerAddress: Int, maxPending: Int? = nil, reserve: Int = 0) {
        self.maxAccepted = max(1, maxAccepted)
        self.maxPendingPerAddress = max(1, maxPendingPerAddress)
        self.maxPending = max(1, min(maxPending ?? maxAccepted, self.maxAccepted))
        self.reserve = max(0, reserve)
    }

    /// The admission for `configuration`: every accepted connection is bounded by the WebSocket limit plus the
    /// plain-HTTP allowance; the connections that are not WebSockets by the allowance, or by one address's cap when
    /// that is larger (a benchmark that opens a thousand WebSockets at once from one address raises it); and up to 64
    /// of the WebSocket places (fewer when ``BridgeServerConfiguration/maxConnections`` is smaller) are the reserve.
    ///
    /// Creating it raises the process's descriptor limit (``FileDescriptorLimit``), so those places can be held.
    convenience init(for configuration: BridgeServerConfiguration) {
        FileDescriptorLimit.raiseToHardLimit()
        self.init(
            maxAccepted: configuration.maxConnections + configuration.maxHTTPConnections,
            maxPendingPerAddress: configuration.maxPendingConnectionsPerAddress,
            maxPending: max(configuration.maxHTTPConnections, configuration.maxPendingConnectionsPerAddress),
            reserve: min(64, configuration.maxConnections))
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

    /// Connections on reserve places now.
    var onProbation: Int {
        state.withLock { $0.probation }
    }

    /// Takes a place for a new connection from `address`, or returns the 503 to answer it with.
    ///
    /// An admission (on probation or not) must be matched by ``answered(_:probation:)`` or
    /// ``abandoned(_:probation:)`` once, with the same `probation`, and by ``closed()`` when the connection ends.
    func admit(_ address: String) -> Decision {
        let decision: Decision? = state.withLock { state in
            if state.accepted >= maxAccepted { return nil }
            let held = state.pending[address, default: 0]
            if held >= maxPendingPerAddress { return .refused(response(.address)) }
            let onProbation: Bool
            if state.pendingTotal < maxPending {
                onProbation = false
                state.pendingTotal += 1
            } else if held < Self.probationShare, state.probation < reserve {
                onProbation = true
                state.probation += 1
            } else {
                return nil
            }
            state.accepted += 1
            state.pending[address] = held + 1
            return onProbation ? .probation : .admitted
        }
        return decision ?? .refused(busy)
    }

    /// The connection from `address` became a WebSocket: it no longer counts toward its address.
    func answered(_ address: String, probation: Bool = false) {
        state.withLock { state in
            let left = state.pending[address, default: 1] - 1
            state.pending[address] = left > 0 ? left : nil
            if probation {
                state.probation = max(0, state.probation - 1)
            } else {
                state.pendingTotal = max(0, state.pendingTotal - 1)
            }
        }
    }

    /// The connection from `address` closed before it became a WebSocket.
    func abandoned(_ address: String, probation: Bool = false) {
        answered(address, probation: probation)
    }

    /// An admitted connection closed.
    func closed() {
        state.withLock { $0.accepted = max(0, $0.accepted - 1) }
    }

    /// The `503 server_busy` for a connection the bridge has no place for (at accept, or on probation when its
    /// request is not a WebSocket upgrade).
    var busy: JSONErrorResponse { response(.full) }

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
                message: "The bridge has no free place for another connection (\(maxAccepted) in all, maxConnections "
                    + "plus maxHTTPConnections; at most \(maxPending) before a WebSocket upgrade); try again later.",
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
