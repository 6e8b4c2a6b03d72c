public import BridgeRPC
public import BridgeTLS
import Foundation
public import Logging
import NIOWebSocket
import Synchronization

/// A JSON-RPC 2.0 connection to a bridge over one WebSocket: requests with awaited answers,
/// notifications, and a stream of what the bridge sends on its own (`session/update`
/// notifications and agent requests such as `session/request_permission`, and answers to requests
/// that were not sent with ``request(_:params:timeout:)``, in order with the rest).
public final class BridgeRPCClient: Sendable {
    /// What the bridge sent that is not an answer to one of our requests.
    public let incoming: AsyncStream<JSONRPCMessage>
    /// The URL connected to.
    public let url: String

    private let core: Core
    private let outbound: AsyncStream<String>.Continuation
    /// The task that owns the WebSocket.
    ///
    /// It holds ``Core`` and the outbound stream, never the client, so it is cancelled when the client goes
    /// away (or the open fails), not kept alive by it.
    private let connectionTask: Mutex<Task<Void, Never>?>


    /// Connects and returns once the WebSocket is open.
    ///
    /// Throws if the upgrade fails or takes longer than `timeout`. `credential` is sent as `Authorization: Bearer`, or
    /// bound to a key as `Authorization: DPoP` with a proof (``BridgeCredential``).
    ///
    /// `url` may name an IPv4 address, a host name, or an IPv6 address in brackets with its zone
    /// (`ws://[fe80::1%25eth0]:9099/`). `wss://` speaks TLS: with `pin` (stored at pairing) a certificate with
    /// another key is refused (``WebSocketConnectorError/pinMismatch(expected:seen:)``); without, the certificate is
    /// trusted on first use and ``certificatePin`` says its pin. A `401`/`403` to the upgrade throws
    /// ``BridgeClientError/unauthorized(_:)`` (``BridgeClientError/tokenExpired(_:)`` for a `403 token_expired` to a
    /// credential); other failures are ``WebSocketConnectorError``s.
    public static func connect(
        to url: String, credential: BridgeCredential? = nil, pin: CertificatePin? = nil, timeout: Duration = .seconds(5), maxFrameSize: Int = 1 << 24,
        pingInterval: Duration? = nil, logger: Logger
    ) async throws -> BridgeRPCClient {
        let target = try WebSocketConnector.Target(url: url)
        let client = BridgeRPCClient(url: url)
        do {
            try await client.open(target: target, credential: credential, pin: pin, timeout: timeout, maxFrameSize: maxFrameSize, pingInterval: pingInterval, logger: logger)
        } catch let error as WebSocketConnectorError where error.needsPairing && !error.refusesHostOrOrigin {
            let said = error.upgradeStatus.map { "HTTP \($0)" } ?? "refused"
            if credential != nil, case .upgradeRefused(403, "token_expired"?, _) = error {
                throw BridgeClientError.tokenExpired("\(said) token_expired")
            }
            throw BridgeClientError.unauthorized(credential == nil
                ? "\(said) to a client without a token: this client has to pair with the bridge first"
                : "\(said): the bridge refused the token (expired or revoked)")
        }
        return client
    }

    /// Connects with `token` sent as `Authorization: Bearer`; see
    /// ``connect(to:credential:pin:timeout:maxFrameSize:pingInterval:logger:)``.
    public static func connect(
        to url: String, token: String?, pin: CertificatePin? = nil, timeout: Duration = .seconds(5), maxFrameSize: Int = 1 << 24,
        pingInterval: Duration? = nil, logger: Logger
    ) async throws -> BridgeRPCClient {
        try await connect(to: url, credential: token.map(BridgeCredential.bearer), pin: pin, timeout: timeout,
                          maxFrameSize: maxFrameSize, pingInterval: pingInterval, logger: logger)
    }

    /// The pin of the certificate the bridge presented (`wss://` only): with trust on first use, the pin to show
    /// and to store.
    public var certificatePin: CertificatePin? { core.state.withLock { $0.certificatePin } }

    private init(url: String) {
        self.url = url
        let (incoming, incomingContinuation) = AsyncStream.makeStream(of: JSONRPCMessage.self, bufferingPolicy: .unbounded)
        self.incoming = incoming
        self.core = Core(incoming: incomingContinuation)
        let (stream, continuation) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .unbounded)
        self.outbound = continuation
        self.outboundStream = stream
        self.connectionTask = Mutex(nil)
    }

    private let outboundStream: AsyncStream<String>

    private func open(
        target: WebSocketConnector.Target, credential: BridgeCredential?, pin: CertificatePin?, timeout: Duration, maxFrameSize: Int,
        pingInterval: Duration?, logger: Logger
    ) async throws {
        let connector = WebSocketConnector(timeout: timeout, maxMessageSize: maxFrameSize, pingInterval: pingInterval, logger: logger)
        let (opened, openedContinuation) = AsyncStream.makeStream(of: Result<Void, any Error>.self, bufferingPolicy: .bufferingNewest(1))
        let (outboundStream, core, url) = (self.outboundStream, self.core, self.url)
        let task = Task {
            do {
                let close = try await connector.connect(to: target, pin: pin, credential: credential) { connection in
                    core.state.withLock { $0.certificatePin = connection.certificatePin }
                    openedContinuation.yield(.success(()))
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            for await text in outboundStream {
                                try await connection.send(text: text)
                            }
                            try await connection.close(code: .normalClosure, reason: "client closed")
                        }
                        group.addTask {
                            for try await message in connection.messages {
                                switch message {
                                case .text(let text): core.receive(text)
                                case .binary: logger.warning("ignoring a binary frame from the bridge; it speaks JSON text")
                                }
                            }
                        }
                        _ = try await group.next()
                        group.cancelAll()
                    }
                    return connection.closeFrame
                }
                let reason = close.map { "closed by the bridge (\($0.code)\($0.reason.isEmpty ? "" : ": " + $0.reason))" } ?? "closed"
                core.finish(reason: reason)
            } catch {
                openedContinuation.yield(.failure(error))
                core.finish(reason: "\(error)")
            }
            openedContinuation.finish()
        }
        connectionTask.withLock { $0 = task }
        let result: Result<Void, any Error>?
        do {
            result = try await WebSocketOpening.firstResult(of: opened, within: timeout, url: url)
        } catch {
            // Cancelled while opening (a Happy Eyeballs attempt that lost): the half-open connection goes now.
            abandon()
            throw error
        }
        switch result {
        case .success?:
            return
        case .failure(let error)?:
            abandon()
            throw error
        case nil:
            abandon()
            throw BridgeClientError.connectionClosed(core.state.withLock { $0.closedReason } ?? "before the WebSocket opened")
        }
    }

    /// Ends an open that failed or was cancelled: pending requests fail and the connection task is cancelled, so a
    /// handshake still under way is closed at once instead of at its timeout.
    private func abandon() {
        close()
        connectionTask.withLock { $0?.cancel() }
    }

    /// Sends a request and waits for its answer; throws the bridge's JSON-RPC error as `.rpc`.
    public func request(_ method: String, params: JSONValue? = nil, timeout: Duration = .seconds(60)) async throws -> JSONValue {
        let id: JSONRPCID = core.state.withLock { state in
            defer { state.nextID += 1 }
            return .int(state.nextID)
        }
        let text = JSONRPCMessage.request(JSONRPCRequest(id: id, method: method, params: params)).jsonText
        return try await withThrowingTaskGroup(of: JSONValue.self) { group in
            group.addTask {
                try await withCheckedThrowingContinuation { continuation in
                    let closed: String? = self.core.state.withLock { state in
                        if let reason = state.closedReason { return reason }
                        state.pending[id] = continuation
                        return nil
                    }
                    if let closed {
                        continuation.resume(throwing: BridgeClientError.connectionClosed(closed))
                    } else {
                        self.outbound.yield(text)
                    }
                }
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw BridgeClientError.timedOut("\(method) was not answered within \(timeout)")
            }
            defer {
                group.cancelAll()
                // A request that timed out or was cancelled must not keep its continuation.
                let leftover = self.core.state.withLock { $0.pending.removeValue(forKey: id) }
                leftover?.resume(throwing: CancellationError())
            }
            guard let value = try await group.next() else { throw CancellationError() }
            return value
        }
    }

    /// Sends a notification.
    public func notify(_ method: String, params: JSONValue? = nil) {
        outbound.yield(JSONRPCMessage.notification(JSONRPCNotification(method: method, params: params)).jsonText)
    }

    /// Answers a request the bridge sent us (for example `session/request_permission`).
    public func respond(to id: JSONRPCID, result: JSONValue) {
        outbound.yield(JSONRPCMessage.response(JSONRPCResponse(id: id, result: result)).jsonText)
    }

    /// Answers a request the bridge sent us with an error.
    public func respond(to id: JSONRPCID, error: JSONRPCError) {
        outbound.yield(JSONRPCMessage.response(JSONRPCResponse(id: id, error: error)).jsonText)
    }

    /// Puts a local notification into ``incoming`` behind everything received so far, so a reader
    /// can tell when it has caught up.
    func enqueueLocalMarker(_ method: String) {
        core.incoming.yield(.notification(JSONRPCNotification(method: method)))
    }

    /// Sends raw text as one frame (for tools and tests).
    public func send(raw text: String) {
        outbound.yield(text)
    }

    /// Closes the WebSocket; pending requests fail.
    public func close() {
        outbound.finish()
        core.finish(reason: "closed by the client")
    }

    /// Why the connection ended, or `nil` while it is open.
    public var closedReason: String? { core.state.withLock { $0.closedReason } }

    deinit {
        outbound.finish()
        connectionTask.withLock { $0?.cancel() }
    }
}

private struct BridgeRPCClientState {
    var nextID: Int64 = 1
    var pending: [JSONRPCID: CheckedContinuation<JSONValue, any Error>] = [:]
    var closedReason: String?
    var certificatePin: CertificatePin?
}

/// What the client and its connection task share: the request table and the stream of what the bridge sends.
private final class Core: Sendable {
    let state = Mutex(BridgeRPCClientState())
    let incoming: AsyncStream<JSONRPCMessage>.Continuation

    init(incoming: AsyncStream<JSONRPCMessage>.Continuation) {
        self.incoming = incoming
    }

    // MARK: - Receiving

    func receive(_ text: String) {
        let elements: [JSONRPCFrame.Element]
        switch JSONRPCFrame(parsing: text) {
        case .single(let element): elements = [element]
        case .batch(let batch): elements = batch
        }
        for element in elements {
            switch element {
            case .message(.response(let response)):
                guard let continuation = state.withLock({ $0.pending.removeValue(forKey: response.id) }) else {
                    // Not one of ours: an answer to a request sent with `send(raw:)` (a relay's), for its reader.
                    incoming.yield(.response(response))
                    continue
                }
                switch response.outcome {
                case .success(let value): continuation.resume(returning: value)
                case .failure(let error): continuation.resume(throwing: BridgeClientError.rpc(error))
                }
            case .message(let message):
                incoming.yield(message)
            case .invalid(let id, let error):
                // An error with a null id answers something we could not send right; surface it.
                incoming.yield(.response(JSONRPCResponse(id: id, error: error)))
            }
        }
    }

    func finish(reason: String) {
        let pending = state.withLock { state -> [CheckedContinuation<JSONValue, any Error>] in
            if state.closedReason == nil { state.closedReason = reason }
            defer { state.pending.removeAll() }
            return Array(state.pending.values)
        }
        for continuation in pending {
            continuation.resume(throwing: BridgeClientError.connectionClosed(reason))
        }
        incoming.finish()
    }
}
