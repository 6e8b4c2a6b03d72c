import BridgePairingWire
public import Foundation
import Synchronization

/// The server's current pairing code: the one plain-text pairing token the process holds, and the payload around it.
///
/// `oa-bridge serve` creates one at start, prints ``payload()`` as a QR code, and serves it from `/pair`,
/// `/api/pair/info` and `/api/pair/qr`; `POST /api/pair/refresh` calls ``rotate()``. The token is re-issued
/// automatically when it was used, claimed by a device awaiting approval, expires within a minute, or was revoked
/// (for example by another process), so the QR code on screen always works for the next phone.
public actor PairingSession {
    /// Where the phone should connect.
    public struct Endpoint: Sendable, Equatable {
        /// LAN address or host name for the QR code (see `LANAddress/preferred()`).
        public var host: String
        /// TCP port.
        public var port: Int
        /// WebSocket path.
        public var webSocketPath: String
        /// Server session UUID.
        public var session: String
        /// Service name.
        public var name: String
        /// Fallback host names (for example the Tailscale name).
        public var fallbacks: [String]
        /// The bridge's TLS certificate pin (`sha256/…`), or `nil` when it serves plaintext only.
        public var pin: String?

        /// An endpoint with all fields given.
        public init(
            host: String, port: Int = 9099, webSocketPath: String = "/", session: String, name: String, fallbacks: [String] = [],
            pin: String? = nil
        ) {
            self.host = host
            self.port = port
            self.webSocketPath = webSocketPath
            self.session = session
            self.name = name
            self.fallbacks = fallbacks
            self.pin = pin
        }
    }

    /// The store issuing pairing tokens, or `nil` when auth is off (`--auth none`): the payload then has no token.
    public nonisolated let store: TokenStore?
    /// The connection details in the payload.
    public nonisolated var endpoint: Endpoint { endpointBox.withLock { $0 } }

    // Not actor state: the port is known only once the server listens (`--port 0`), and readers are synchronous.
    private nonisolated let endpointBox: Mutex<Endpoint>

    /// The clock the pairing code's expiry is read on (the token store's, in a bridge): the token answers count
    /// `expires_in` from its time.
    public nonisolated let clock: TokenClock
    private var current: IssuedToken?
    private let watchers = PayloadWatchers()

    /// A pairing session for `endpoint`; pass `store: nil` for `--auth none`.
    public init(store: TokenStore?, endpoint: Endpoint, clock: TokenClock = .system) {
        self.store = store
        self.endpointBox = Mutex(endpoint)
        self.clock = clock
    }

    /// The server listens on `port` (the one the system chose when it was asked for port 0): the payload says so.
    public nonisolated func listening(onPort port: Int) {
        endpointBox.withLock { $0.port = port }
    }

    /// The payload with a pairing token that is valid now (issuing a new one if needed).
    public func payload() async throws(PairingError) -> PairingPayload {
        let endpoint = endpoint
        return PairingPayload(
            host: endpoint.host, port: endpoint.port, webSocketPath: endpoint.webSocketPath, session: endpoint.session,
            name: endpoint.name, token: try await validToken()?.token, fallbacks: endpoint.fallbacks, pin: endpoint.pin)
    }

    /// When the current pairing token expires, or `nil` when auth is off or none was issued yet.
    public func expiresAt() -> Date? { current?.expiresAt }

    /// Issues a new pairing token (revoking the previous one) and returns the new payload.
    @discardableResult
    public func rotate() async throws(PairingError) -> PairingPayload {
        guard let store else { return try await payload() }
        current = try await store.issuePairingToken()
        let fresh = try await payload()
        announce(fresh)
        return fresh
    }

    /// The payloads with a new pairing code, each time the code changes after the first one: replaced by ``rotate()``,
    /// or re-issued because the one shown was used by a phone, claimed by a device awaiting approval, revoked or about
    /// to expire (noticed by ``payload()`` and ``replaceIfUsed()``).
    ///
    /// Issue 29 item 3: `oa-bridge serve` prints each. The stream keeps the newest only, and ends when the caller
    /// stops iterating.
    public func changes() -> AsyncStream<PairingPayload> {
        let (stream, continuation) = AsyncStream.makeStream(of: PairingPayload.self, bufferingPolicy: .bufferingNewest(1))
        let id = UUID()
        watchers.add(id, continuation)
        continuation.onTermination = { [watchers] _ in watchers.remove(id) }
        return stream
    }

    /// After a pairing exchange: when the code shown can no longer pair a phone (it was used, or claimed by a device
    /// awaiting approval), a new one is issued and announced on ``changes()`` at once, so the next phone never meets
    /// "already used".
    public func replaceIfUsed() async {
        _ = try? await payload()
    }

    private func announce(_ payload: PairingPayload) {
        watchers.announce(payload)
    }

    private func validToken() async throws(PairingError) -> IssuedToken? {
        guard let store else { return nil }
        if let current, current.expiresAt > clock.now().addingTimeInterval(60), try await store.isPairingTokenUsable(current.token) {
            return current
        }
        let replaced = current != nil
        let fresh = try await store.issuePairingToken()
        current = fresh
        if replaced, !watchers.isEmpty {
            announce(PairingPayload(
                host: endpoint.host, port: endpoint.port, webSocketPath: endpoint.webSocketPath, session: endpoint.session,
                name: endpoint.name, token: fresh.token, fallbacks: endpoint.fallbacks, pin: endpoint.pin))
        }
        return fresh
    }
}

extension TokenStore {
    /// Whether `pairingToken` could still pair a new device now: not used, revoked or expired, and not claimed by a
    /// device waiting for approval (so the QR code moves on to a fresh token once a phone has registered).
    ///
    /// Does not consume it.
    public func isPairingTokenUsable(_ pairingToken: String) async throws(PairingError) -> Bool {
        guard TokenSecret.isWellFormed(pairingToken, kind: .pairing) else { return false }
        return try await pairingTokenState(hash: TokenSecret.hash(pairingToken))
    }
}
