import BridgeRPC
import Foundation
public import Logging
import Synchronization

/// A client's session with one bridge, as `oa-bridge connect` and a phone app use it: races the candidates, sends
/// `initialize`, keeps the link alive with pings, and when the connection drops mid-prompt reconnects with backoff
/// (the endpoint that won first, then the others), resumes the session, and delivers every update exactly once, in
/// order.
///
/// Credentials come from `credential` at every attempt, so a ``TokenVault`` refreshes them when they near expiry.
///
/// ```swift
/// let vault = TokenVault(file: tokensFile)
/// let session = try await BridgeClientSession.connect(to: candidates, credential: BridgeClientSession.credential(vault: vault), logger: logger)
/// defer { session.close() }
/// let sessionID = try await session.newSession(cwd: session.first.workingDirectory ?? ".")
/// let stopReason = try await session.prompt(sessionID: sessionID, text: "hello") { update, _ in … } onPermission: { _ in nil }
/// ```
public final class BridgeClientSession: Sendable {
    /// The connection made by ``connect(to:options:credential:refresh:logger:)``: the race, the endpoint, `initialize`'s answer.
    public let first: BridgeConnection
    private let current: Mutex<BridgeAgentClient>
    private let candidates: [BridgeEndpoint]
    private let options: BridgeSessionOptions
    private let credential: @Sendable () async throws -> BridgeCredential?
    private let refresh: (@Sendable () async throws -> BridgeCredential?)?
    private let logger: Logger
    /// Each session's directory, to open a new one in the same place when the bridge forgot it.
    private let directories = Mutex<[String: String]>([:])
    /// Sessions replaced by a new one (read-only after a restart), old id to new.
    private let replacements = Mutex<[String: String]>([:])
    /// Each session's sequence tracker.
    private let trackers = Mutex<[String: SequenceTracker]>([:])

    private init(first: BridgeConnection, candidates: [BridgeEndpoint], options: BridgeSessionOptions,
                 credential: @escaping @Sendable () async throws -> BridgeCredential?,
                 refresh: (@Sendable () async throws -> BridgeCredential?)?, logger: Logger) {
        self.first = first
        self.current = Mutex(first.client)
        self.candidates = candidates
        self.options = options
        self.credential = credential
        self.refresh = refresh
        self.logger = logger
    }

    /// Connects to the first of `candidates` to answer `initialize` (see
    /// ``BridgeConnection/open(_:options:credential:refresh:logger:)``).
    /// - Parameters:
    ///   - candidates: the addresses to race (from discovery, saved bridges or the command line), in order.
    ///   - options: timeouts, pings, the reconnect policy and the pin.
    ///   - credential: what to present (the access token, with its DPoP key when bound), asked once for this race and
    ///     once per attempt when reconnecting (`nil` for a bridge without auth); see ``credential(given:vault:)``.
    ///   - refresh: rotates the tokens and returns the new credential, for a bridge that refuses the access token as
    ///     expired before this client expected (clocks apart); see ``refresh(given:vault:)``.
    ///   - logger: where the session logs its attempts and reconnects (never a token).
    /// - Returns: the session, connected to the first candidate that answered.
    /// - Throws: ``BridgeClientError`` when no candidate answers.
    public static func connect(
        to candidates: [BridgeEndpoint], options: BridgeSessionOptions = BridgeSessionOptions(),
        credential: @escaping @Sendable () async throws -> BridgeCredential?,
        refresh: (@Sendable () async throws -> BridgeCredential?)? = nil, logger: Logger
    ) async throws -> BridgeClientSession {
        // One credential for the whole first race: a refresh that fails is reported as such, not as N failed attempts.
        let initial = try await credential()
        let first = try await BridgeConnection.open(candidates, options: options, credential: { initial }, refresh: refresh, logger: logger)
        return BridgeClientSession(
            first: first, candidates: candidates, options: options, credential: credential, refresh: refresh, logger: logger)
    }

    /// The refresh most clients want with ``credential(given:vault:)``: none for `given` (a bearer token of its own)
    /// or no vault; else the vault's tokens rotated (``TokenVault/refresh()``) and its new credential.
    public static func refresh(given: String? = nil, vault: TokenVault?) -> (@Sendable () async throws -> BridgeCredential?)? {
        guard given == nil, let vault else { return nil }
        return { () async throws -> BridgeCredential? in
            try await vault.refresh()
            return try await vault.credential()
        }
    }

    /// The credential source most clients want: `given` (a bearer token) when there is one, else the vault's
    /// credential (refreshed first when it is about to expire, with its DPoP key when bound) once it is paired, else none.
    public static func credential(given: String? = nil, vault: TokenVault?) -> @Sendable () async throws -> BridgeCredential? {
        { () async throws -> BridgeCredential? in
            if let given { return .bearer(given) }
            guard let vault, await vault.current != nil else { return nil }
            return try await vault.credential()
        }
    }

    /// The client on the live connection (a new one after each reconnect).
    public var client: BridgeAgentClient { current.withLock { $0 } }

    /// Opens a session on the desktop in `cwd`; returns its id.
    public func newSession(cwd: String) async throws -> String {
        let id = try await client.newSession(cwd: cwd)
        directories.withLock { $0[id] = cwd }
        // A new session counts its updates from 1, even under the id of one it replaces (an agent that restarted
        // numbers its sessions again).
        trackers.withLock { $0[id] = SequenceTracker() }
        return id
    }

    /// Sends a prompt and streams its updates (with the sequence number of each) until the turn ends; returns the
    /// stop reason, or `nil` when the bridge no longer knew of a running prompt after a reconnect.
    ///
    /// When the connection drops, `onReconnect` hears of each retry and of the resume; the turn continues on the new
    /// connection without repeating an update. When the bridge no longer knows the session after the reconnect (it
    /// restarted), `session/load` tries to attach to it again (a bridge that restored its sessions, an agent that
    /// loads them); failing that a new session is opened in the same directory and
    /// ``BridgeClientError/sessionReplaced(old:new:reason:)`` says which.
    /// - Throws: ``BridgeClientError/gaveUp(attempts:lastReason:)`` after the ``ReconnectPolicy`` gives up,
    ///   ``BridgeClientError/sessionReplaced(old:new:reason:)``, or what the bridge answered (never retried).
    public func prompt(
        sessionID: String, text: String,
        onUpdate: @escaping @Sendable (BridgeAgentClient.Update, _ sequence: Int) async -> Void,
        onPermission: @escaping BridgeAgentClient.PermissionHandler,
        onReconnect: @escaping @Sendable (BridgeReconnectEvent) -> Void = { _ in }
    ) async throws -> String? {
        try await prompt(sessionID: sessionID, text: text, key: BridgeClientSession.newIdempotencyKey(), movesLeft: 2,
                         onUpdate: onUpdate, onPermission: onPermission, onReconnect: onReconnect)
    }

    /// One prompt with its idempotency key; `movesLeft` bounds how often it follows its session elsewhere (attached
    /// again, loaded again, or a new session) when the bridge refuses it before recording it.
    private func prompt(
        sessionID: String, text: String, key: String, movesLeft: Int,
        onUpdate: @escaping @Sendable (BridgeAgentClient.Update, _ sequence: Int) async -> Void,
        onPermission: @escaping BridgeAgentClient.PermissionHandler,
        onReconnect: @escaping @Sendable (BridgeReconnectEvent) -> Void
    ) async throws -> String? {
        // The session's tracker, kept across prompts: a resume asks for what came after the last update shown, never
        // for the session's whole history again.
        let seen = tracker(for: sessionID)
        let before = seen.last
        let deliver: @Sendable (BridgeAgentClient.Update) async -> Void = { update in await onUpdate(update, seen.last) }
        // One key per typed prompt, the same on every retry: a bridge that got it once never runs it twice.
        let send: @Sendable (BridgeAgentClient) async throws -> String = { client in
            try await client.prompt(sessionID: sessionID, text: text, idempotencyKey: key, seen: seen, onUpdate: deliver, onPermission: onPermission)
        }
        do {
            do {
                return try await send(client)
            } catch BridgeClientError.connectionClosed(let reason) {
                return try await recover(sessionID: sessionID, seen: seen, before: before, reason: reason, onUpdate: deliver,
                                         onPermission: onPermission, onReconnect: onReconnect, resend: send)
            }
        } catch BridgeClientError.rpc(let error) where movesLeft > 0 && seen.last == before {
            // Refused before the bridge recorded it (its record, an update, would have come back first): the prompt
            // can follow its session without running twice.
            let followed: String?
            do {
                followed = try await follow(sessionID, refusedWith: error, onReconnect: onReconnect)
            } catch BridgeClientError.connectionClosed(let reason) {
                // The link ended while the session was being attached again (its `session/load` waited for an agent
                // being restarted; issue 25, finding F8): reconnect, resume, and send the prompt once it is known not to
                // have run, as for a link lost mid-prompt (bounded by the reconnect policy).
                return try await recover(sessionID: sessionID, seen: seen, before: before, reason: reason, onUpdate: deliver,
                                         onPermission: onPermission, onReconnect: onReconnect, resend: send)
            }
            guard let target = followed else { throw BridgeClientError.rpc(error) }
            return try await prompt(sessionID: target, text: text, key: target == sessionID ? key : BridgeClientSession.newIdempotencyKey(),
                                    movesLeft: movesLeft - 1, onUpdate: onUpdate, onPermission: onPermission, onReconnect: onReconnect)
        }
    }

    /// Where a prompt the bridge refused with `error` can go: the same session once this connection is attached to it
    /// again (another client loaded it after the agent restarted) or it is loaded again (the bridge forgot it), or a new
    /// session in the same directory (it is read-only, or cannot be loaded); `nil` when the error is about the prompt.
    private func follow(
        _ sessionID: String, refusedWith error: JSONRPCError, onReconnect: @Sendable (BridgeReconnectEvent) -> Void
    ) async throws -> String? {
        let cwd = directories.withLock { $0[sessionID] } ?? first.workingDirectory ?? "."
        let reason = "\(TerminalText.escapedLine(error.message)) (\(error.code))"
        let client = self.client
        if BridgeClientSession.isNotAttached(error, sessionID: sessionID) {
            // Attach again after the last update shown; what came meanwhile is replayed (the tracker keeps out repeats).
            _ = try await client.connection.request(
                "_oa/session/resume", params: ["sessionId": .string(sessionID), "lastSeq": .int(Int64(tracker(for: sessionID).last))])
            logger.notice("the connection was no longer attached to the session; attached again", metadata: ["session": "\(sessionID)"])
            return sessionID
        }
        if BridgeClientSession.isSessionGone(error) {
            do {
                let loaded = try await client.loadSession(sessionID, cwd: cwd)
                onReconnect(.reloaded(sessionID: sessionID))
                if !BridgeClientSession.keptNumbering(loaded, seen: tracker(for: sessionID).last) {
                    trackers.withLock { $0[sessionID] = SequenceTracker() }  // the agent loaded it: counted from 1 again
                }
                return sessionID
            } catch BridgeClientError.rpc(let loadError) where BridgeClientSession.isBridgeStopping(loadError) {
                throw BridgeClientError.connectionClosed(loadError.message)
            } catch BridgeClientError.rpc(let loadError) {
                logger.info("session/load failed; opening a new session", metadata: ["code": "\(loadError.code)"])
            }
        } else if error.code != BridgeClientSession.readOnlySessionCode {
            return nil
        }
        let replacement = try await newSession(cwd: cwd)
        replacements.withLock { $0[sessionID] = replacement }
        onReconnect(.replaced(old: sessionID, new: replacement, reason: reason))
        return replacement
    }

    /// Whether `error` is the bridge's "session … is not attached to this connection" (`-32602` with only
    /// `data.sessionId`).
    static func isNotAttached(_ error: JSONRPCError, sessionID: String) -> Bool {
        error.code == JSONRPCError.invalidParamsCode && error.data == ["sessionId": .string(sessionID)]
    }

    /// The session that goes on for `sessionID`: itself, or the one that replaced it when it turned read-only.
    public func currentSessionID(_ sessionID: String) -> String {
        replacements.withLock { replacements in
            var id = sessionID
            var hops = 0
            while let next = replacements[id], hops < 64 {
                id = next
                hops += 1
            }
            return id
        }
    }

    /// The bridge's error for a prompt to a restored session its agent could not load (read-only).
    static let readOnlySessionCode = -32011

    /// The highest update sequence number shown of `sessionID`.
    private func tracker(for sessionID: String) -> SequenceTracker {
        trackers.withLock { trackers in
            if let tracker = trackers[sessionID] { return tracker }
            let tracker = SequenceTracker()
            trackers[sessionID] = tracker
            return tracker
        }
    }

    /// A fresh `_meta.oa.idempotencyKey` (the agreed 1–128 characters).
    static func newIdempotencyKey() -> String {
        "connect-\(UUID().uuidString.lowercased())"
    }

    /// Closes the live connection.
    public func close() {
        client.connection.close()
    }

    /// Reconnects with backoff and resumes until the prompt's end is known.
    ///
    /// Only a lost link or an absent bridge is retried; an answer from the bridge (an error, a refused token) ends
    /// the recovery at once.
    private func recover(
        sessionID: String, seen: SequenceTracker, before: Int, reason: String,
        onUpdate: @escaping @Sendable (BridgeAgentClient.Update) async -> Void,
        onPermission: @escaping BridgeAgentClient.PermissionHandler,
        onReconnect: @escaping @Sendable (BridgeReconnectEvent) -> Void,
        resend: @Sendable (BridgeAgentClient) async throws -> String
    ) async throws -> String? {
        var lastReason = TerminalText.escapedLine(reason)
        var attempt = 0
        // The same desktop again: the address that won first, then the other candidates.
        let again = [first.endpoint] + candidates.filter { $0 != first.endpoint }
        while let delay = options.reconnectPolicy.delay(forAttempt: attempt) {
            attempt += 1
            onReconnect(.retrying(reason: lastReason, delay: delay, attempt: attempt, of: options.reconnectPolicy.maximumAttempts))
            try await Task.sleep(for: delay)
            let fresh: BridgeAgentClient
            do {
                fresh = try await BridgeConnection.open(again, options: options, credential: credential, refresh: refresh, logger: logger)
                    .client
            } catch let error as BridgeClientError where error.isTransient {
                lastReason = error.summary
                continue
            }
            let stale = current.withLock { client in
                defer { client = fresh }
                return client
            }
            stale.connection.close()
            onReconnect(.resuming(afterUpdate: seen.last))
            do {
                if let stopReason = try await fresh.resume(
                    sessionID: sessionID, seen: seen, onUpdate: onUpdate, onPermission: onPermission,
                    onLost: { after, through in onReconnect(.lostUpdates(afterSeq: after, throughSeq: through)) }) {
                    return stopReason
                }
                // Neither running nor finished: the prompt never reached the bridge (typed while the link was dead, or
                // lost with it). Sent now, with the same key.
                onReconnect(.resending(recorded: seen.last != before))
                return try await resend(fresh)
            } catch BridgeClientError.rpc(let error) where BridgeClientSession.isSessionGone(error) {
                try await reattachOrReplace(sessionID, on: fresh, why: error, onReconnect: onReconnect)
                // Attached again (the bridge kept the session through a restart). A prompt the bridge had recorded
                // (its record, an update, came back) ran, perhaps partly, before the restart: not sent again. One it
                // never recorded goes now, with its key.
                guard seen.last == before else { return nil }
                onReconnect(.resending(recorded: false))
                return try await resend(fresh)
            } catch let error as BridgeClientError where error.isTransient {
                lastReason = error.summary
            }
        }
        logger.notice("gave up reconnecting", metadata: ["attempts": "\(attempt)", "reason": "\(lastReason)"])
        throw BridgeClientError.gaveUp(attempts: attempt, lastReason: lastReason)
    }

    /// Whether a `session/load` answer comes from a bridge that kept the session's numbering (it restored the session
    /// it keeps: `_meta.lastSeq` at or past what this client saw), so its replay of what was shown is not shown again
    /// (the chaos run saw `connect` print a session's whole history again after an agent restart).
    static func keptNumbering(_ loaded: JSONValue, seen: Int) -> Bool {
        guard let last = loaded["_meta"]?["lastSeq"]?.intValue else { return false }
        return Int(last) >= seen
    }

    /// Whether the bridge refused because it is shutting down (`data.reason` "bridge shutting down"): what was asked
    /// goes again once it is back, as after a lost link.
    static func isBridgeStopping(_ error: JSONRPCError) -> Bool {
        error.data?["reason"] == .string("bridge shutting down")
    }

    /// Whether the bridge's answer to `_oa/session/resume` means it does not have the session at all (`-32002`
    /// without `oldestSeq`, which would be a gap in a session it has) or dropped it while idle (`-32006`).
    static func isSessionGone(_ error: JSONRPCError) -> Bool {
        if error.code == -32006 { return true }
        return error.code == -32002 && error.data?["oldestSeq"] == nil
    }

    /// The bridge forgot `sessionID`: `session/load` it again if the bridge or its agent can, else open a new session
    /// in its directory and throw ``BridgeClientError/sessionReplaced(old:new:reason:)``.
    private func reattachOrReplace(
        _ sessionID: String, on fresh: BridgeAgentClient, why: JSONRPCError, onReconnect: @Sendable (BridgeReconnectEvent) -> Void
    ) async throws {
        let cwd = directories.withLock { $0[sessionID] } ?? first.workingDirectory ?? "."
        do {
            try await fresh.loadSession(sessionID, cwd: cwd)
            logger.notice("the bridge had forgotten the session; session/load attached to it again", metadata: ["session": "\(sessionID)"])
            onReconnect(.reloaded(sessionID: sessionID))
            return
        } catch BridgeClientError.rpc(let loadError) where BridgeClientSession.isBridgeStopping(loadError) {
            throw BridgeClientError.connectionClosed(loadError.message)
        } catch BridgeClientError.rpc(let loadError) {
            logger.info("session/load failed; opening a new session", metadata: ["code": "\(loadError.code)"])
        }
        let replacement = try await newSession(cwd: cwd)
        throw BridgeClientError.sessionReplaced(old: sessionID, new: replacement, reason: "\(TerminalText.escapedLine(why.message)) (\(why.code))")
    }
}
