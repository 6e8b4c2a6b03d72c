import BridgeRPC
import BridgeTLS
import Foundation
public import Logging

/// A stdio ACP agent that is a bridge's agent: what `oa-bridge connect --stdio` runs for an editor (Zed, JetBrains,
/// Toad) that starts it as its agent. Every message goes both ways as it came, byte for byte (key order, numbers such as
/// `1.50`, spacing), the editor's `initialize` included (the editor sees the bridge's answer), over the bridge's ACP
/// endpoint (`/acp`, official ACP v1 dialect); the one change is a prompt's `_meta.oa.idempotencyKey`, added as one
/// member when the editor sent none.
///
/// A dropped link is mended without the editor noticing: the relay reconnects with backoff (the endpoint that won
/// first, then the others; a fresh token each time), sends the editor's `initialize` again, attaches again to every
/// session the editor opened (`_oa/session/resume` after the last update it passed on, or `session/load` when the
/// bridge forgot the session), and passes on only what the editor has not had: no update twice, none lost while the
/// bridge held it. A prompt that was running follows on (its answer comes when the bridge says it finished); one that
/// never reached the bridge, or was typed while the link was down, is sent once the link is back, with the same
/// `_meta.oa.idempotencyKey`, so a bridge that honours the key never runs it twice. Requests that give the same answer
/// twice are sent again; any other request whose answer was lost is answered with an error that says so.
///
/// ```swift
/// let relay = ACPRelay(candidates: candidates, options: options, credential: BridgeClientSession.credential(vault: vault),
///                      logger: logger, output: { line in print(line) }, onEvent: { event in … })
/// await relay.run(lines: standardInputLines)
/// ```
public actor ACPRelay {
    /// Writes one JSON-RPC message (a line without its newline) to the editor.
    public typealias Output = @Sendable (String) -> Void

    /// The path of the bridge's ACP endpoint.
    public static let acpPath = "/acp"

    private let candidates: [BridgeEndpoint]
    private let options: BridgeSessionOptions
    private let credential: @Sendable () async throws -> BridgeCredential?
    private let refresh: (@Sendable () async throws -> BridgeCredential?)?
    private let logger: Logger
    private let output: Output
    private let onEvent: @Sendable (ACPRelayEvent) -> Void
    private let noCandidates: String

    private enum Phase {
        /// Waiting for the editor's `initialize`.
        case awaitingInitialize
        /// Connecting, or reconnecting and attaching again: the editor's messages wait in the outbox.
        case connecting
        /// A link is up and every session attached: messages go straight through.
        case ready
        /// Reconnecting gave up (`reason`); the next message from the editor starts over.
        case unreachable(String)
    }

    private var phase = Phase.awaitingInitialize
    private var link: ACPRelayLink?
    private var endpoint: BridgeEndpoint?
    private var generation = 0
    /// The editor's `initialize` as it came, and its id: sent again, unchanged, on every new link.
    private var initializeText = ""
    private var initializeRequestID: JSONRPCID = .null
    /// Set while the editor waits for the answer to its `initialize`.
    private var initializeID: JSONRPCID?
    private var initialized = false
    private var connector: Task<Void, Never>?
    private var reader: Task<Void, Never>?

    private var order = 0
    private var pending: [JSONRPCID: RelayedRequest] = [:]
    private var outbox: [RelayOutgoing] = []
    private var sessions: [String: RelayedSession] = [:]
    /// The highest `_meta.seq` passed on per session: an update at or below it is one the editor has.
    private var lastSeq: [String: Int64] = [:]
    /// Requests of the agent passed on to the editor and not answered yet, with their session.
    private var agentRequests: [JSONRPCID: String] = [:]
    /// The editor's answers to the agent's requests on the present link, sent again when the bridge asks again after
    /// a reconnect (the first went down with the link).
    private var answers: [JSONRPCID: String] = [:]
    private var answerOrder: [JSONRPCID] = []
    /// Sessions being attached again: the bridge asks their waiting requests again, which the editor already has.
    private var resuming: Set<String> = []
    /// Sessions being loaded again: the history the bridge replays is what the editor already shows.
    private var reloading: Set<String> = []
    private var ownCounter = 0
    private var own: [String: CheckedContinuation<Result<JSONValue, JSONRPCError>?, Never>] = [:]

    /// Creates a relay.
    ///
    /// Nothing happens until the editor's `initialize` comes.
    /// - Parameters:
    ///   - candidates: where the bridge may be (as ``BridgeCandidates`` finds them); each is dialled at ``acpPath``.
    ///   - options: timeouts, pings, the reconnect policy and the pin (with one, only `wss://` to that key).
    ///   - credential: what to present (the access token, with its DPoP key when bound), asked at every attempt (see
    ///     ``BridgeClientSession/credential(given:vault:)``).
    ///   - refresh: rotates the tokens and returns the new credential, for a bridge that refuses the access token as
    ///     expired before this client expected (clocks apart): each race tries once more with it (see
    ///     ``BridgeClientSession/refresh(given:vault:)``).
    ///   - logger: where the relay logs its links and what the bridge said (never a token).
    ///   - noCandidates: what the editor's `initialize` is answered when there is no candidate at all.
    ///   - output: writes one message to the editor (called in order, one at a time).
    ///   - onEvent: hears of links made, lost and mended (for a log on stderr).
    public init(
        candidates: [BridgeEndpoint], options: BridgeSessionOptions,
        credential: @escaping @Sendable () async throws -> BridgeCredential?,
        refresh: (@Sendable () async throws -> BridgeCredential?)? = nil,
        logger: Logger, noCandidates: String = "no bridge found and no address to try",
        output: @escaping Output, onEvent: @escaping @Sendable (ACPRelayEvent) -> Void = { _ in }
    ) {
        self.candidates = candidates.map { endpoint in
            var copy = endpoint
            copy.path = ACPRelay.acpPath
            return copy
        }
        self.options = options
        self.credential = credential
        self.refresh = refresh
        self.logger = logger
        self.noCandidates = noCandidates
        self.output = output
        self.onEvent = onEvent
    }

    /// Relays until `lines` (the editor's messages, one JSON-RPC message per line) ends, then closes the link.
    public func run<Lines: AsyncSequence & Sendable>(lines: Lines) async where Lines.Element == String {
        do {
            for try await line in lines {
                receive(line: line)
            }
        } catch {
            logger.warning("reading the editor's messages failed", metadata: ["error": "\(error)"])
        }
        close()
    }

    /// Closes the link and stops reconnecting.
    public func close() {
        connector?.cancel()
        connector = nil
        reader?.cancel()
        link?.close()
        link = nil
    }

    // MARK: - From the editor

    /// Handles one line from the editor.
    public func receive(line: String) {
        let text = line.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { return }
        switch JSONRPCFrame(parsing: text) {
        case .batch:
            // ACP sends no batches; one is passed on as it is, for the bridge to answer.
            guard initialized else { return answerLocally(.invalidRequest("send initialize first"), to: .null) }
            submit(.raw(text))
        case .single(.invalid(let id, let error)):
            answerLocally(error, to: id)
        case .single(.message(let message)):
            receive(message, text: text)
        }
    }

    private func receive(_ message: JSONRPCMessage, text: String) {
        switch message {
        case .request(let request) where request.method == "initialize" && !initialized:
            guard initializeID == nil else {
                return answerLocally(.invalidRequest("initialize is already under way"), to: request.id)
            }
            initializeID = request.id
            initializeRequestID = request.id
            initializeText = text
            phase = .connecting
            startConnecting(first: true)
        case .request(let request):
            guard initialized else {
                return answerLocally(.invalidRequest("\(request.method) before initialize: send initialize first"), to: request.id)
            }
            var relayed = request
            var relayedText = text
            if request.method == "session/prompt" {
                (relayed.params, relayedText) = ACPRelay.withIdempotencyKey(request.params, text: text, request: request)
            }
            order += 1
            pending[request.id] = RelayedRequest(request: relayed, text: relayedText, order: order)
            submit(.request(request.id))
        case .response(let response):
            // The editor's answer to a request of the agent.
            agentRequests.removeValue(forKey: response.id)
            remember(answer: text, to: response.id)
            submit(.raw(text))
        case .notification(let notification):
            guard initialized else { return }
            if notification.method == "session/cancel", let sessionID = notification.params?["sessionId"]?.stringValue {
                cancelQueuedPrompts(of: sessionID)
            }
            submit(.raw(text))
        }
    }

    /// Keeps the editor's answer to an agent request, for the bridge asking again after a reconnect; the latest 256.
    private func remember(answer: String, to id: JSONRPCID) {
        if answers.updateValue(answer, forKey: id) == nil { answerOrder.append(id) }
        while answerOrder.count > 256 {
            answers.removeValue(forKey: answerOrder.removeFirst())
        }
    }

    /// A prompt's params with `_meta.oa.idempotencyKey` (one per prompt the editor sends; kept when it has one).
    static func withIdempotencyKey(_ params: JSONValue?) -> JSONValue? {
        guard case .object(var members)? = params else { return params }
        var meta = members["_meta"]?.objectValue ?? [:]
        var oa = meta["oa"]?.objectValue ?? [:]
        if oa["idempotencyKey"]?.stringValue == nil {
            oa["idempotencyKey"] = .string("connect-\(UUID().uuidString.lowercased())")
        }
        meta["oa"] = .object(oa)
        members["_meta"] = .object(meta)
        return .object(members)
    }

    /// A prompt's params and text with `_meta.oa.idempotencyKey` (``withIdempotencyKey(_:)``), the key added to the
    /// editor's bytes as one member (``ACPRelaySplice``); encoded again only when the bytes cannot take it so.
    static func withIdempotencyKey(_ params: JSONValue?, text: String, request: JSONRPCRequest) -> (JSONValue?, String) {
        let keyed = withIdempotencyKey(params)
        guard keyed != params, let key = keyed?["_meta"]?["oa"]?["idempotencyKey"]?.stringValue else { return (params, text) }
        let value = JSONValue.string(key).jsonText
        if let spliced = ACPRelaySplice.inserting("idempotencyKey", value: value, at: ["params", "_meta", "oa"], in: text) {
            return (keyed, spliced)
        }
        var encoded = request
        encoded.params = keyed
        return (keyed, JSONRPCMessage.request(encoded).jsonText)
    }

    /// A `session/cancel` for a session whose prompts still wait in the outbox: they are answered `cancelled` and never
    /// sent.
    private func cancelQueuedPrompts(of sessionID: String) {
        let queued = Set(pending.values.filter { $0.sentOn == nil && $0.request.method == "session/prompt" && $0.sessionID == sessionID }
            .map(\.request.id))
        guard !queued.isEmpty else { return }
        outbox.removeAll { item in
            if case .request(let id) = item { return queued.contains(id) }
            return false
        }
        for id in queued {
            pending.removeValue(forKey: id)
            write(.response(JSONRPCResponse(id: id, result: ["stopReason": "cancelled"])))
        }
    }

    /// Sends now when the link is up, else keeps it for the next link (and starts one when reconnecting had given up).
    private func submit(_ item: RelayOutgoing) {
        switch phase {
        case .ready:
            send(item)
        case .connecting, .awaitingInitialize:
            outbox.append(item)
        case .unreachable:
            outbox.append(item)
            phase = .connecting
            startConnecting(first: false)
        }
    }

    private func send(_ item: RelayOutgoing) {
        guard let link else { return outbox.append(item) }
        switch item {
        case .request(let id):
            guard var request = pending[id] else { return }
            request.sentOn = generation
            pending[id] = request
            if request.request.method == "session/load", let sessionID = request.sessionID {
                lastSeq[sessionID] = 0  // the editor asks for the history: every update of it passes
            }
            link.send(raw: request.text)
        case .raw(let text):
            link.send(raw: text)
        }
    }

    private func answerLocally(_ error: JSONRPCError, to id: JSONRPCID) {
        write(.response(JSONRPCResponse(id: id, error: error)))
    }

    func write(_ message: JSONRPCMessage) {
        output(message.jsonText)
    }

    // MARK: - Connecting

    private func startConnecting(first: Bool) {
        guard connector == nil else { return }
        connector = Task { await self.connectLoop(first: first) }
    }

    /// Opens a link (the first at once; after a loss each attempt after the policy's delay), then attaches again and
    /// sends what waited; gives up after the policy's last attempt or at an answer that is not the network's.
    private func connectLoop(first: Bool) async {
        var failures = 0
        var lastReason = "the link was lost"
        while !Task.isCancelled {
            if !first || failures > 0 {
                // The first link is tried at once (the editor waits for initialize's answer); after a loss, and after
                // each failure, the policy's delay comes first.
                let index = first ? failures - 1 : failures
                guard let delay = options.reconnectPolicy.delay(forAttempt: index) else { break }
                onEvent(.retrying(reason: lastReason, delay: delay, attempt: index + 1, of: options.reconnectPolicy.maximumAttempts))
                do { try await Task.sleep(for: delay) } catch { return }
            }
            do {
                let opened = try await open()
                connector = nil
                await adopt(opened, first: first)
                return
            } catch let error as BridgeClientError where error.isTransient && !candidates.isEmpty {
                lastReason = error.summary
                failures += 1
            } catch {
                // Refused credentials, a certificate with another key: trying again changes nothing.
                lastReason = (error as? BridgeClientError)?.summary ?? "\(error)"
                break
            }
        }
        connector = nil
        if Task.isCancelled { return }
        giveUp(reason: lastReason)
    }

    private struct Opened: Sendable {
        var client: ACPRelayLink
        var endpoint: BridgeEndpoint
        /// The bridge's answer to the editor's `initialize`, as it came.
        var answer: ACPRelayFrame

        /// Whether the answer is a result (not an error).
        var accepted: Bool {
            if case .response(let response)? = answer.message { return response.error == nil }
            return false
        }
    }

    /// Races the candidates; the first that opens and answers `initialize` (with the editor's params) wins.
    private func open() async throws -> Opened {
        guard !candidates.isEmpty else { throw BridgeClientError.noCandidates(noCandidates) }
        let (options, credential, logger, text, id) = (self.options, self.credential, self.logger, self.initializeText, self.initializeRequestID)
        let race = HappyEyeballs(attemptDelay: options.attemptDelay)
        let refreshed = OneRefresh.of(refresh)
        let raced = try await race.race(BridgeConnection.distinct(candidates, pin: options.pin), attempt: { endpoint in
            let client = try await OneRefresh.connecting(refreshed, credential: try await credential(), address: endpoint.url, logger: logger) {
                try await ACPRelayLink.connect(
                    to: endpoint.url, credential: $0, pin: options.pin, timeout: options.connectTimeout,
                    pingInterval: options.pingInterval, logger: logger)
            }
            do {
                // The editor's own initialize, as it came; the answer (a result or an error) reaches it as it comes.
                let answer = try await client.request(raw: text, id: id, timeout: options.initializeTimeout)
                return Opened(client: client, endpoint: endpoint, answer: answer)
            } catch {
                client.close()
                throw error
            }
        }, closeLoser: { loser in loser.client.close() })
        return raced.value
    }

    /// Takes a new link: answers the editor's `initialize` (the first link) or attaches the sessions again, then sends
    /// what waited.
    private func adopt(_ opened: Opened, first: Bool) async {
        generation += 1
        let generation = self.generation
        link = opened.client
        endpoint = opened.endpoint
        let client = opened.client
        reader = Task { [weak self] in
            for await frame in client.incoming {
                await self?.fromBridge(frame, generation: generation)
            }
            await self?.linkLost(generation: generation, reason: client.closedReason ?? "closed")
        }
        onEvent(.connected(endpoint: opened.endpoint, pin: client.certificatePin, first: first))
        if first {
            guard initializeID != nil else { return }
            initializeID = nil
            output(opened.answer.text)
            guard opened.accepted else {
                // The bridge refused the editor's initialize: the editor may try another.
                close()
                phase = .awaitingInitialize
                return
            }
            initialized = true
        } else {
            if !opened.accepted {
                let code = opened.answer.message.flatMap { message -> Int? in
                    if case .response(let response) = message { return response.error.map { Int($0.code) } }
                    return nil
                }
                logger.warning("the bridge refused initialize after a reconnect", metadata: ["code": "\(code.map(String.init) ?? "?")"])
                client.close()
                return
            }
            guard await reattach(on: client, generation: generation) else { return }
        }
        phase = .ready
        flush()
    }

    /// Sends, in order, the requests whose answers were lost (repeatable ones) and what the editor sent meanwhile.
    private func flush() {
        let resend = pending.values.filter { $0.sentOn == nil && !outbox.containsRequest($0.request.id) }
            .sorted { $0.order < $1.order }.map { RelayOutgoing.request($0.request.id) }
        let queued = resend + outbox
        outbox = []
        for item in queued { send(item) }
    }

    private func giveUp(reason: String) {
        logger.notice("gave up reaching the bridge", metadata: ["reason": "\(reason)"])
        onEvent(.gaveUp(reason: reason))
        phase = .unreachable(reason)
        if let id = initializeID {
            initializeID = nil
            phase = .awaitingInitialize
            answerLocally(.internalError("oa-bridge connect could not reach the bridge: \(reason)", data: ["reason": "unreachable"]), to: id)
        }
        // Nothing waits for ever: every request still open is answered, saying whether it was sent.
        let open = pending.values.sorted { $0.order < $1.order }
        pending = [:]
        outbox = []
        for request in open {
            let what = request.sentOn == nil && !request.following
                ? "not sent: the bridge could not be reached (\(reason)); send it again"
                : "the link to the bridge was lost before \(request.request.method) was answered and could not be restored (\(reason)); "
                    + "whether it ran is not known"
            answerLocally(.internalError(what, data: ["reason": "unreachable", "method": .string(request.request.method),
                                                      "sent": .bool(request.sentOn != nil || request.following)]), to: request.request.id)
        }
    }

    // MARK: - From the bridge

    private func fromBridge(_ frame: ACPRelayFrame, generation: Int) {
        guard generation == self.generation else { return }
        guard let message = frame.message else {
            // A batch, or what is not one JSON-RPC message: passed on as it came.
            return output(frame.text)
        }
        switch message {
        case .response(let response):
            if case .string(let id) = response.id, let continuation = own.removeValue(forKey: id) {
                continuation.resume(returning: response.outcome)
                return
            }
            guard let request = pending.removeValue(forKey: response.id) else {
                logger.debug("an answer to no open request of the editor was dropped", metadata: ["id": "\(response.id)"])
                return
            }
            noteAnswer(request.request, response)
            output(frame.text)
        case .notification(let notification):
            let sessionID = notification.params?["sessionId"]?.stringValue
            if notification.method == "session/update", let sessionID {
                if reloading.contains(sessionID) { return }  // the history the editor has
                if let seq = notification.params?["_meta"]?["seq"]?.intValue {
                    guard seq > lastSeq[sessionID, default: 0] else { return }  // replayed: the editor has it
                    lastSeq[sessionID] = seq
                }
            }
            if notification.method == "_oa/request_answered", let id = notification.params?["requestId"].flatMap(JSONRPCID.init) {
                agentRequests.removeValue(forKey: id)  // another client answered it, or it timed out or was cancelled
            }
            if notification.method == "_oa/prompt_finished", let sessionID,
               let followed = pending.values.first(where: { $0.following && $0.sessionID == sessionID }) {
                // The prompt that ran on while the link was down ended: its answer, to the editor's request.
                pending.removeValue(forKey: followed.request.id)
                let stopReason = notification.params?["stopReason"] ?? "end_turn"
                if stopReason.stringValue == "error" {
                    answerLocally(.internalError("the agent answered this prompt with an error while the link to the bridge was down"),
                                  to: followed.request.id)
                } else {
                    write(.response(JSONRPCResponse(id: followed.request.id, result: ["stopReason": stopReason])))
                }
                return
            }
            output(frame.text)
        case .request(let request):
            let sessionID = request.params?["sessionId"]?.stringValue ?? ""
            if resuming.contains(sessionID) {
                // Asked again by the resume: the editor has it, or answered it on the link that dropped.
                if agentRequests[request.id] != nil { return }
                if let answer = answers[request.id] {
                    link?.send(raw: answer)
                    return
                }
            }
            agentRequests[request.id] = sessionID
            output(frame.text)
        }
    }

    /// Keeps track of the sessions the editor opens and closes.
    private func noteAnswer(_ request: JSONRPCRequest, _ response: JSONRPCResponse) {
        guard case .success(let result) = response.outcome else { return }
        let params = request.params
        switch request.method {
        case "session/new", "session/fork":
            guard let id = result["sessionId"]?.stringValue else { return }
            sessions[id] = RelayedSession(cwd: params?["cwd"]?.stringValue ?? ".", mcpServers: params?["mcpServers"] ?? [])
        case "session/load", "session/resume":
            guard let id = params?["sessionId"]?.stringValue else { return }
            sessions[id] = RelayedSession(cwd: params?["cwd"]?.stringValue ?? ".", mcpServers: params?["mcpServers"] ?? [])
            if let last = result["_meta"]?["lastSeq"]?.intValue { lastSeq[id] = max(lastSeq[id, default: 0], last) }
        case "session/close", "session/delete":
            guard let id = params?["sessionId"]?.stringValue else { return }
            sessions.removeValue(forKey: id)
            lastSeq.removeValue(forKey: id)
        default:
            break
        }
    }

    // MARK: - Losing and mending the link

    private func linkLost(generation: Int, reason: String) {
        guard generation == self.generation, link != nil else { return }
        link = nil
        reader = nil
        for continuation in own.values { continuation.resume(returning: nil) }
        own = [:]
        logger.notice("the link to the bridge was lost; reconnecting", metadata: ["reason": "\(reason)"])
        onEvent(.lost(reason: reason))
        for (id, request) in pending where request.sentOn != nil {
            if request.request.method == "session/prompt" {
                pending[id]?.following = false  // settled after the resume: followed, answered, or sent again with its key
            } else if RelayedRequest.repeatable.contains(request.request.method) {
                pending[id]?.sentOn = nil  // sent again once the link is back
            } else {
                pending.removeValue(forKey: id)
                answerLocally(.internalError(
                    "the link to the bridge dropped before \(request.request.method) was answered; oa-bridge connect is reconnecting: send it again",
                    data: ["reason": "link_lost", "method": .string(request.request.method)]), to: id)
            }
        }
        phase = .connecting
        startConnecting(first: false)
    }

    /// Attaches every session the editor opened to the new link; settles the prompts sent on the old one.
    ///
    /// Returns `false` when this link dropped meanwhile (the next one starts over).
    private func reattach(on client: ACPRelayLink, generation: Int) async -> Bool {
        var resumed = 0
        var reloaded = 0
        for (sessionID, session) in sessions.sorted(by: { $0.key < $1.key }) {
            resuming.insert(sessionID)
            let answer = await ownRequest("_oa/session/resume",
                                          ["sessionId": .string(sessionID), "lastSeq": .int(lastSeq[sessionID, default: 0])], on: client)
            resuming.remove(sessionID)
            guard generation == self.generation, let answer else { return false }
            switch answer {
            case .success(let result):
                resumed += 1
                settlePrompts(of: sessionID, running: result["promptRunning"]?.boolValue == true,
                              finished: result["finishedWhileAway"]?.stringValue)
            case .failure(let error) where BridgeClientSession.isSessionGone(error):
                // The bridge restarted or dropped it: load it again (a bridge that kept its sessions, an agent that
                // loads them). The history it replays is what the editor shows already.
                reloading.insert(sessionID)
                resuming.insert(sessionID)
                let load = await ownRequest("session/load", ["sessionId": .string(sessionID), "cwd": .string(session.cwd),
                                                             "mcpServers": session.mcpServers], on: client)
                reloading.remove(sessionID)
                resuming.remove(sessionID)
                guard generation == self.generation, let load else { return false }
                switch load {
                case .success(let result):
                    reloaded += 1
                    if let last = result["_meta"]?["lastSeq"]?.intValue { lastSeq[sessionID] = last }
                    settlePrompts(of: sessionID, running: result["_meta"]?["promptRunning"]?.boolValue == true, finished: nil)
                case .failure(let loadError):
                    forget(sessionID, reason: "\(error.message) (\(error.code)); session/load: \(loadError.message) (\(loadError.code))")
                }
            case .failure(let error) where error.code == -32002 && error.data?["oldestSeq"] != nil:
                // Attached, but updates the editor missed are gone: say so, and go on.
                onEvent(.gap(sessionID: sessionID, detail: error.message))
                resumed += 1
                settlePrompts(of: sessionID, running: false, finished: nil)
            case .failure(let error):
                forget(sessionID, reason: "\(error.message) (\(error.code))")
            }
        }
        answers = [:]
        answerOrder = []
        onEvent(.resumed(resumed: resumed, reloaded: reloaded))
        return true
    }

    /// The prompts of `sessionID` sent on a link that dropped: followed when one runs on, answered when one finished
    /// meanwhile, else sent again with the same idempotency key (the bridge never got it, or runs it once).
    private func settlePrompts(of sessionID: String, running: Bool, finished: String?) {
        let prompts = pending.values.filter { $0.sentOn != nil && !$0.following && $0.sessionID == sessionID && $0.request.method == "session/prompt" }
            .sorted { $0.order < $1.order }
        for (index, prompt) in prompts.enumerated() {
            let id = prompt.request.id
            if index == 0, running {
                pending[id]?.following = true
            } else if index == 0, let finished {
                pending.removeValue(forKey: id)
                if finished == "error" {
                    answerLocally(.internalError("the agent answered this prompt with an error while the link to the bridge was down"), to: id)
                } else {
                    write(.response(JSONRPCResponse(id: id, result: ["stopReason": .string(finished)])))
                }
            } else {
                pending[id]?.sentOn = nil  // sent again by flush(), in order, with its key
            }
        }
    }

    private func forget(_ sessionID: String, reason: String) {
        logger.warning("a session could not be attached again", metadata: ["session": "\(sessionID)", "reason": "\(reason)"])
        onEvent(.sessionLost(sessionID: sessionID, reason: reason))
        sessions.removeValue(forKey: sessionID)
        for (id, request) in pending where request.sessionID == sessionID && request.sentOn != nil && request.request.method == "session/prompt" {
            pending.removeValue(forKey: id)
            answerLocally(.internalError("the bridge no longer has session \(sessionID) after the link dropped (\(reason)); open a new session",
                                         data: ["reason": "session_lost", "sessionId": .string(sessionID)]), to: id)
        }
    }

    /// A request of the relay's own on `client`, answered in order with what the bridge sends; `nil` when the link
    /// dropped first.
    private func ownRequest(_ method: String, _ params: JSONValue, on client: ACPRelayLink) async -> Result<JSONValue, JSONRPCError>? {
        ownCounter += 1
        let id = "oa-connect-relay-\(ownCounter)"
        return await withCheckedContinuation { continuation in
            own[id] = continuation
            client.send(raw: JSONRPCMessage.request(JSONRPCRequest(id: .string(id), method: method, params: params)).jsonText)
        }
    }
}

extension [RelayOutgoing] {
    /// Whether the request with `id` waits here.
    func containsRequest(_ id: JSONRPCID) -> Bool {
        contains { item in
            if case .request(let queued) = item { return queued == id }
            return false
        }
    }
}
