import BridgeRPC
import Logging
import Synchronization

/// A client's session with one bridge, as `oa-bridge connect` and a phone app use it: races the candidates, sends
/// `initialize`, keeps the link alive with pings, and when the connection drops mid-prompt reconnects with backoff
/// (the endpoint that won first, then the others), resumes the session, and delivers every update exactly once, in
/// order. Tokens come from `token` at every attempt, so a ``TokenVault`` refreshes them when they near expiry.
///
/// ```swift
/// let vault = TokenVault(file: tokensFile)
/// let session = try await BridgeClientSession.connect(to: candidates, token: BridgeClientSession.token(vault: vault), logger: logger)
/// defer { session.close() }
/// let sessionID = try await session.newSession(cwd: session.first.workingDirectory ?? ".")
/// let stopReason = try await session.prompt(sessionID: sessionID, text: "hello") { update, _ in … } onPermission: { _ in nil }
/// ```
public final class BridgeClientSession: Sendable {
    /// The connection made by ``connect(to:options:token:logger:)``: the race, the endpoint, `initialize`'s answer.
    public let first: BridgeConnection
    private let current: Mutex<BridgeAgentClient>
    private let candidates: [BridgeEndpoint]
    private let options: BridgeSessionOptions
    private let token: @Sendable () async throws -> String?
    private let logger: Logger

    private init(first: BridgeConnection, candidates: [BridgeEndpoint], options: BridgeSessionOptions,
                 token: @escaping @Sendable () async throws -> String?, logger: Logger) {
        self.first = first
        self.current = Mutex(first.client)
        self.candidates = candidates
        self.options = options
        self.token = token
        self.logger = logger
    }

    /// Connects to the first of `candidates` to answer `initialize` (see ``BridgeConnection/open(_:options:token:logger:)``).
    /// - Parameter token: the access token, asked once for this race and once per attempt when reconnecting (`nil` for a bridge without auth); see ``token(given:vault:)``.
    /// - Throws: ``BridgeClientError`` when no candidate answers.
    public static func connect(
        to candidates: [BridgeEndpoint], options: BridgeSessionOptions = BridgeSessionOptions(),
        token: @escaping @Sendable () async throws -> String?, logger: Logger
    ) async throws -> BridgeClientSession {
        // One token for the whole first race: a refresh that fails is reported as such, not as N failed attempts.
        let initial = try await token()
        let first = try await BridgeConnection.open(candidates, options: options, token: { initial }, logger: logger)
        return BridgeClientSession(first: first, candidates: candidates, options: options, token: token, logger: logger)
    }

    /// The token source most clients want: `given` when there is one, else the vault's access token (refreshed
    /// first when it is about to expire) once it is paired, else none.
    public static func token(given: String? = nil, vault: TokenVault?) -> @Sendable () async throws -> String? {
        { () async throws -> String? in
            if let given { return given }
            guard let vault, await vault.current != nil else { return nil }
            return try await vault.accessToken()
        }
    }

    /// The client on the live connection (a new one after each reconnect).
    public var client: BridgeAgentClient { current.withLock { $0 } }

    /// Opens a session on the desktop in `cwd`; returns its id.
    public func newSession(cwd: String) async throws -> String {
        try await client.newSession(cwd: cwd)
    }

    /// Sends a prompt and streams its updates (with the sequence number of each) until the turn ends; returns the
    /// stop reason, or `nil` when the bridge no longer knew of a running prompt after a reconnect.
    ///
    /// When the connection drops, `onReconnect` hears of each retry and of the resume; the turn continues on the new
    /// connection without repeating an update.
    /// - Throws: ``BridgeClientError/connectionClosed(_:)`` after the ``ReconnectPolicy`` gives up, or what the
    ///   bridge answered.
    public func prompt(
        sessionID: String, text: String,
        onUpdate: @escaping @Sendable (BridgeAgentClient.Update, _ sequence: Int) async -> Void,
        onPermission: @escaping BridgeAgentClient.PermissionHandler,
        onReconnect: @escaping @Sendable (BridgeReconnectEvent) -> Void = { _ in }
    ) async throws -> String? {
        let seen = SequenceTracker()
        let deliver: @Sendable (BridgeAgentClient.Update) async -> Void = { update in await onUpdate(update, seen.last) }
        do {
            return try await client.prompt(sessionID: sessionID, text: text, seen: seen, onUpdate: deliver, onPermission: onPermission)
        } catch BridgeClientError.connectionClosed(let reason) {
            return try await recover(sessionID: sessionID, seen: seen, reason: reason, onUpdate: deliver,
                                     onPermission: onPermission, onReconnect: onReconnect)
        }
    }

    /// Closes the live connection.
    public func close() {
        client.connection.close()
    }

    /// Reconnects with backoff and resumes until the prompt's end is known.
    private func recover(
        sessionID: String, seen: SequenceTracker, reason: String,
        onUpdate: @escaping @Sendable (BridgeAgentClient.Update) async -> Void,
        onPermission: @escaping BridgeAgentClient.PermissionHandler,
        onReconnect: @Sendable (BridgeReconnectEvent) -> Void
    ) async throws -> String? {
        var lastReason = reason
        var attempt = 0
        // The same desktop again: the address that won first, then the other candidates.
        let again = [first.endpoint] + candidates.filter { $0 != first.endpoint }
        while let delay = options.reconnectPolicy.delay(forAttempt: attempt) {
            attempt += 1
            onReconnect(.retrying(reason: lastReason, delay: delay, attempt: attempt))
            try await Task.sleep(for: delay)
            do {
                let fresh = try await BridgeConnection.open(again, options: options, token: token, logger: logger).client
                let stale = current.withLock { client in
                    defer { client = fresh }
                    return client
                }
                stale.connection.close()
                onReconnect(.resuming(afterUpdate: seen.last))
                return try await fresh.resume(sessionID: sessionID, seen: seen, onUpdate: onUpdate, onPermission: onPermission)
            } catch BridgeClientError.connectionClosed(let why) {
                lastReason = why
            } catch let error as BridgeClientError {
                lastReason = error.description
            }
        }
        logger.notice("gave up reconnecting", metadata: ["attempts": "\(attempt)", "reason": "\(lastReason)"])
        throw BridgeClientError.connectionClosed("gave up after \(attempt) reconnect attempts: \(lastReason)")
    }
}
