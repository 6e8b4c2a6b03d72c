import BridgeHTTP
import BridgePairing
import BridgeRPC
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Metrics
import NIOCore
import NIOPosix

/// The Streamable HTTP profile of ACP's remote-transport RFD at `/acp`, beside the WebSocket upgrade on the same path:
/// the same checks (browser `Origin`, clear text, allowed networks, connection limit, `Authorization: Bearer`), the
/// same hub and sessions.
///
/// - `POST` `initialize` → `200` with the answer and `Acp-Connection-Id`; any other message → `202`, its answer on a
///   stream. `415` without `Content-Type: application/json`, `501` for a batch, `400` for what is not one JSON-RPC
///   message or lacks `Acp-Connection-Id` (or `Acp-Session-Id` where a session-scoped method needs it), `404` for an
///   unknown connection or session, `403` for a connection of another device.
/// - `GET` (`Accept: text/event-stream`) → the connection-scoped SSE stream, or with `Acp-Session-Id` that session's;
///   `Last-Event-ID` resumes after that event while the stream still holds it. A newer `GET` of a stream takes it
///   over. `406` when `Accept` excludes `text/event-stream`.
/// - `DELETE` → `202`, the connection ends (its prompts run on, as after a WebSocket's close).
struct StreamableHTTPRoutes {
    /// The checks a WebSocket upgrade passes, for each request.
    struct Access: Sendable {
        let browsers: BrowserOriginPolicy
        let plaintext: PlaintextPolicy
        let gate: NetworkGate?
        let authorize: BridgeUpgradeAuthorizer?
    }

    /// Methods whose POST must name their session in `Acp-Session-Id` (the RFD's session-scoped methods).
    static let sessionScopedMethods: Set<String> = [
        "session/prompt", "session/cancel", "session/set_mode", "session/set_config_option", "session/close",
        "session/set_model",
    ]
    // Valid field names, so HTTPField.Name's failable initializer cannot fail for them.
    // swift-format-ignore: NeverForceUnwrap
    static let connectionHeader = HTTPField.Name("Acp-Connection-Id")!
    // swift-format-ignore: NeverForceUnwrap
    static let sessionHeader = HTTPField.Name("Acp-Session-Id")!
    // swift-format-ignore: NeverForceUnwrap
    static let lastEventIDHeader = HTTPField.Name("Last-Event-ID")!
    /// How often an idle stream gets a comment (proxies close quiet connections).
    static let keepalive = TimeAmount.seconds(15)
    /// A connection with no stream open and no request for this long ends (its client went away without `DELETE`).
    static let idleTimeout = TimeAmount.seconds(300)

    let hub: BridgeHub
    let access: Access
    let slots: ConnectionSlots
    let registry: StreamableHTTPRegistry
    let configuration: BridgeServerConfiguration
    let logger: Logger

    /// Adds `POST`, `GET` and `DELETE` at ``BridgeServer/acpPath`` to `router`.
    func register(on router: Router<BridgeRequestContext>) {
        let path = RouterPath(BridgeServer.acpPath)
        router.post(path) { request, context in try await self.post(request, context: context) }
        router.get(path) { request, context in try await self.get(request, context: context) }
        router.delete(path) { request, context in try await self.delete(request, context: context) }
    }

    // MARK: POST

    private func post(_ request: Request, context: BridgeRequestContext) async throws -> Response {
        var request = request
        let device: AuthenticatedDevice?
        switch await admit(request, context: context) {
        case .success(let admitted): device = admitted
        case .failure(let refusal): return refusal.response
        }
        guard let type = request.headers[.contentType]?.lowercased(),
              type.hasPrefix("application/json")
        else {
            return Self.refusal(.unsupportedMediaType, "unsupported_media_type", "POST /acp takes one JSON-RPC message as application/json").response
        }
        let limit = ClientConnection.readLimit(for: configuration.maxFrameSize)
        let body: ByteBuffer
        do {
            body = try await request.collectBody(upTo: limit)
        } catch {
            return Self.refusal(.contentTooLarge, "message_too_large", "a message is at most \(limit) bytes").response
        }
        let text = String(buffer: body)
        let message: JSONRPCMessage
        switch JSONRPCFrame(parsing: text) {
        case .batch:
            return Self.refusal(.notImplemented, "batch_not_supported", "send one JSON-RPC message per POST").response
        case .single(.invalid(let id, let error)):
            return Self.json(.badRequest, JSONRPCMessage.response(JSONRPCResponse(id: id, error: error)).jsonText)
        case .single(.message(let parsed)):
            message = parsed
        }
        if case .request(let initialize) = message, initialize.method == "initialize" {
            return await open(text, id: initialize.id, device: device, context: context)
        }
        let connection: StreamableHTTPConnection
        switch find(request, device: device) {
        case .success(let found): connection = found
        case .failure(let refusal): return refusal.response
        }
        let session = request.headers[Self.sessionHeader]
        if let method = message.method, Self.sessionScopedMethods.contains(method), session == nil {
            return Self.refusal(.badRequest, "missing_session_id", "\(method) needs the Acp-Session-Id header").response
        }
        if let session {
            guard connection.isAttached(session) else {
                return Self.refusal(.notFound, "unknown_session", "this connection has not opened, loaded or resumed that session").response
            }
            if let named = StreamableHTTPConnection.sessionID(in: message.params), named != session {
                return Self.refusal(.badRequest, "session_mismatch", "Acp-Session-Id and params.sessionId differ").response
            }
        }
        await connection.receive(text, message: message, scoped: session != nil)
        return Response(status: .accepted, headers: [Self.connectionHeader: connection.id])
    }

    /// `initialize`: a new connection, answered in the POST's body.
    private func open(_ text: String, id: JSONRPCID, device: AuthenticatedDevice?, context: BridgeRequestContext) async -> Response {
        if let refusal = slots.refusal() { return refusal.response }
        let remote = context.remoteAddress?.ipAddress
        let (hubID, frames) = await hub.connect(remote: remote, device: device)
        _ = slots.open()
        let registry = self.registry
        let slots = self.slots
        let connection = StreamableHTTPConnection(
            id: UUID().uuidString.lowercased(), hubID: hubID, owner: device?.deviceID, hub: hub,
            eventLoop: MultiThreadedEventLoopGroup.singleton.any(), logger: logger,
            onEnd: { id in if registry.remove(id) { slots.close() } })
        registry.add(connection)
        connection.watchIdle(timeout: Self.idleTimeout, interval: .seconds(30))
        frames.attach(connection, onClose: { kind, reason in connection.hubClosed(kind, reason) })
        if let expiresAt = device?.accessTokenExpiresAt { hub.tokenExpiresAt(expiresAt) }
        guard let answer = await connection.initialize(text, id: id) else {
            connection.end(note: "closed before initialize was answered")
            return Self.refusal(.serviceUnavailable, "connection_closed", "the bridge closed the connection before answering initialize").response
        }
        let answerText = String(buffer: answer)
        if case .single(.message(.response(let response))) = JSONRPCFrame(parsing: answerText), response.error != nil {
            connection.end(note: "initialize failed")
            return Self.json(.ok, answerText)
        }
        logger.debug("streamable HTTP connection opened", metadata: ["acp_connection": "\(connection.id)", "remote": "\(remote ?? "?")"])
        var response = Self.json(.ok, answerText)
        response.headers[Self.connectionHeader] = connection.id
        return response
    }

    // MARK: GET

    private func get(_ request: Request, context: BridgeRequestContext) async throws -> Response {
        let device: AuthenticatedDevice?
        switch await admit(request, context: context) {
        case .success(let admitted): device = admitted
        case .failure(let refusal): return refusal.response
        }
        if let accept = request.headers[.accept]?.lowercased(),
           !accept.contains("text/event-stream"), !accept.contains("*/*"), !accept.contains("text/*") {
            return Self.refusal(.notAcceptable, "not_acceptable", "GET /acp answers text/event-stream").response
        }
        let connection: StreamableHTTPConnection
        switch find(request, device: device) {
        case .success(let found): connection = found
        case .failure(let refusal): return refusal.response
        }
        let key: StreamableHTTPConnection.StreamKey = request.headers[Self.sessionHeader].map { .session($0) } ?? .connection
        let lastEventID = request.headers[Self.lastEventIDHeader]?.trimmingCharacters(in: .whitespaces)
        if let lastEventID, !Self.isEventID(lastEventID, of: key) {
            return Self.refusal(.badRequest, "invalid_last_event_id", key == .connection
                ? "Last-Event-ID of the connection's stream is an event number this stream gave"
                : "Last-Event-ID of a session's stream is a seq (\"41\") or an event id this stream gave (\"41.2\")").response
        }
        let token: UInt64
        let resumed: StreamableHTTPStreamLog.Attached
        let replayAfter: Int64?
        switch connection.open(key, lastEventID: lastEventID) {
        case .opened(let opened, let attached, let after):
            token = opened
            resumed = attached
            replayAfter = after
        case .unknownSession:
            return Self.refusal(.notFound, "unknown_session", "this connection has not opened, loaded or resumed that session").response
        case .ended:
            return Self.refusal(.notFound, "unknown_connection", "no such connection (it ended); initialize again").response
        }
        if case .session(let session) = key, let replayAfter {
            await connection.replay(session, after: replayAfter)
        }
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        headers[.cacheControl] = "no-store"
        headers[Self.connectionHeader] = connection.id
        if case .session(let session) = key { headers[Self.sessionHeader] = session }
        let readerLoop = connection.eventLoop
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            defer { connection.close(key, reader: token) }
            let opening: String
            switch (resumed, replayAfter) {
            case (.notHeld, let after?): opening = "open; replaying the session's updates after seq \(after)"
            case (.notHeld, nil): opening = "open; Last-Event-ID is no longer held, resuming after the last event written"
            default: opening = "open"
            }
            // The reader runs on the connection's event loop, where the hub hands it its messages: a batch wakes it
            // with no thread woken (on the cooperative pool every batch crossed threads twice).
            try await withTaskExecutorPreference(EventLoopTaskExecutor(readerLoop)) {
                // `retry`: an EventSource reconnects after 2 s; the comment makes proxies and clients see the stream start.
                try await writer.write(ByteBuffer(string: "retry: 2000\n: \(opening)\n\n"))
                loop: while true {
                    switch await connection.next(key, reader: token, keepalive: Self.keepalive) {
                    case .events(var events):
                        // Once more round the loop first: what the hub hands over in the jobs already queued on it
                        // (an agent's burst) joins this batch, so it goes out in one write and one flush.
                        await Task.yield()
                        if case .events(let more) = connection.taken(key, reader: token) { events += more }
                        // One body part per batch (one chunk, one trip through the pipeline), not one per event; the
                        // SSE bytes made straight into it.
                        var batch = ByteBufferAllocator().buffer(capacity: events.reduce(0) { $0 + $1.size })
                        for event in events { StreamableHTTPStreamLog.write(event, into: &batch) }
                        try await writer.write(batch)
                        connection.wrote(events, on: key)
                    case .keepalive:
                        try await writer.write(ByteBuffer(string: ": keepalive\n\n"))
                    case .end(let note):
                        if let note { try await writer.write(ByteBuffer(string: ": \(note.replacingOccurrences(of: "\n", with: " "))\n\n")) }
                        break loop
                    }
                }
                try await writer.finish(nil)
            }
        })
    }

    /// Whether `id` can be a `Last-Event-ID` of the stream `key`: a number on the connection's stream, a `seq` or
    /// `seq.k` on a session's.
    static func isEventID(_ id: String, of key: StreamableHTTPConnection.StreamKey) -> Bool {
        switch key {
        case .connection: return id.allSatisfy(\.isASCII) && Int(id).map { $0 >= 0 } == true
        case .session: return StreamableHTTPConnection.seq(ofEventID: id) != nil
        }
    }

    // MARK: DELETE

    private func delete(_ request: Request, context: BridgeRequestContext) async throws -> Response {
        let device: AuthenticatedDevice?
        switch await admit(request, context: context) {
        case .success(let admitted): device = admitted
        case .failure(let refusal): return refusal.response
        }
        switch find(request, device: device) {
        case .success(let connection):
            connection.end(note: "closed by the client (DELETE)")
            return Response(status: .accepted)
        case .failure(let refusal):
            return refusal.response
        }
    }

    // MARK: Checks

    /// The upgrade's checks, in its order; the device the token names, if tokens are on.
    private func admit(_ request: Request, context: BridgeRequestContext) async -> Result<AuthenticatedDevice?, JSONErrorResponse> {
        if let refusal = access.browsers.upgradeRefusal(request, context: context, logger: logger) { return .failure(refusal) }
        if let refusal = access.plaintext.upgradeRefusal(request, context: context, logger: logger) { return .failure(refusal) }
        let remote = context.remoteAddress?.ipAddress
        if let gate = access.gate, !gate.admits(remote) { return .failure(gate.refusal(for: remote)) }
        guard let authorize = access.authorize else { return .success(nil) }
        let upgrade = BridgeUpgradeRequest(
            path: request.uri.description, headers: request.headers, remoteAddress: remote, host: request.head.authority,
            method: request.method.rawValue, isTLS: context.isTLS)
        switch await authorize(upgrade) {
        case .allow:
            return .success(nil)
        case .authenticated(let device):
            return .success(device)
        case .deny(let refusal):
            BridgeMetrics.authFailures.increment()
            logger.notice("/acp request refused", metadata: [
                "status": "\(refusal.status.code)", "reason": "\(refusal.code)", "message": "\(refusal.message)", "remote": "\(remote ?? "?")",
            ])
            return .failure(refusal)
        }
    }

    /// The connection `Acp-Connection-Id` names, if it is open and `device`'s.
    private func find(_ request: Request, device: AuthenticatedDevice?) -> Result<StreamableHTTPConnection, JSONErrorResponse> {
        guard let id = request.headers[Self.connectionHeader] else {
            return .failure(Self.refusal(.badRequest, "missing_connection_id", "send the Acp-Connection-Id that initialize returned"))
        }
        guard let connection = registry.connection(id) else {
            return .failure(Self.refusal(.notFound, "unknown_connection", "no such connection (it ended, or never was); initialize again"))
        }
        guard connection.owner == device?.deviceID else {
            logger.notice("/acp request for a connection of another device refused", metadata: ["device": "\(device?.deviceID ?? "-")"])
            return .failure(Self.refusal(.forbidden, "connection_of_another_device", "this connection belongs to another device"))
        }
        return .success(connection)
    }

    private static func refusal(_ status: HTTPResponse.Status, _ code: String, _ message: String) -> JSONErrorResponse {
        JSONErrorResponse(status: status, code: code, message: message)
    }

    private static func json(_ status: HTTPResponse.Status, _ text: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        headers[.cacheControl] = "no-store"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
