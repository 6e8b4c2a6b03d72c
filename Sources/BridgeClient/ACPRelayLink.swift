import BridgeRPC
import BridgeTLS
import Foundation
import Logging
import NIOWebSocket
import Synchronization

/// One frame the bridge sent to an ``ACPRelay``: its text exactly as it came (what the editor gets) and the message
/// read from it (what the relay acts on; `nil` for a batch or what is not one JSON-RPC message, passed on as it is).
struct ACPRelayFrame: Sendable {
    let text: String
    let message: JSONRPCMessage?
}

/// The WebSocket of an ``ACPRelay`` to the bridge's `/acp`: frames go out and come in as text, unchanged (an editor's
/// message keeps its key order, its numbers and its spacing both ways), beside the message parsed from each.
///
/// ``BridgeRPCClient`` encodes what it sends and hands on only the parsed message.
final class ACPRelayLink: Sendable {
    /// The frames the bridge sent, in order (an answer ``request(raw:id:timeout:)`` waits for is not among them).
    let incoming: AsyncStream<ACPRelayFrame>
    /// The URL connected to.
    let url: String

    private struct State {
        var waiting: [JSONRPCID: CheckedContinuation<ACPRelayFrame, any Error>] = [:]
        var closedReason: String?
        var certificatePin: CertificatePin?
    }

    private let state = Mutex(State())
    private let incomingContinuation: AsyncStream<ACPRelayFrame>.Continuation
    private let outbound: AsyncStream<String>.Continuation
    private let outboundStream: AsyncStream<String>
    private let connectionTask = Mutex<Task<Void, Never>?>(nil)

    private init(url: String) {
        self.url = url
        (incoming, incomingContinuation) = AsyncStream.makeStream(of: ACPRelayFrame.self, bufferingPolicy: .unbounded)
        (outboundStream, outbound) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .unbounded)
    }

    /// Opens the WebSocket (as ``BridgeRPCClient/connect(to:credential:pin:timeout:maxFrameSize:pingInterval:logger:)``
    /// does: the pin, the credential, the same errors) and returns once it is open.
    static func connect(
        to url: String, credential: BridgeCredential?, pin: CertificatePin?, timeout: Duration, maxFrameSize: Int = 1 << 24,
        pingInterval: Duration?, logger: Logger
    ) async throws -> ACPRelayLink {
        let target = try WebSocketConnector.Target(url: url)
        let link = ACPRelayLink(url: url)
        do {
            try await link.open(target: target, credential: credential, pin: pin, timeout: timeout, maxFrameSize: maxFrameSize,
                                pingInterval: pingInterval, logger: logger)
        } catch let error as WebSocketConnectorError where error.needsPairing && !error.refusesHostOrOrigin {
            let said = error.upgradeStatus.map { "HTTP \($0)" } ?? "refused"
            if credential != nil, case .upgradeRefused(403, "token_expired"?, _) = error {
                throw BridgeClientError.tokenExpired("\(said) token_expired")
            }
            throw BridgeClientError.unauthorized(credential == nil
                ? "\(said) to a client without a token: this client has to pair with the bridge first"
                : "\(said): the bridge refused the token (expired or revoked)")
        }
        return link
    }

    /// The pin of the certificate the bridge presented (`wss://` only).
    var certificatePin: CertificatePin? { state.withLock { $0.certificatePin } }

    /// Why the link ended, or `nil` while it is open.
    var closedReason: String? { state.withLock { $0.closedReason } }

    /// Sends `text` as one frame, as it is.
    func send(raw text: String) {
        outbound.yield(text)
    }

    /// Sends the request `text` (whose id is `id`) as it is and waits for its answer, which does not go to
    /// ``incoming``.
    func request(raw text: String, id: JSONRPCID, timeout: Duration) async throws -> ACPRelayFrame {
        try await withThrowingTaskGroup(of: ACPRelayFrame.self) { group in
            group.addTask {
                try await withCheckedThrowingContinuation { continuation in
                    let closed: String? = self.state.withLock { state in
                        if let reason = state.closedReason { return reason }
                        state.waiting[id] = continuation
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
                throw BridgeClientError.timedOut("the bridge did not answer within \(timeout)")
            }
            defer {
                group.cancelAll()
                let leftover = self.state.withLock { $0.waiting.removeValue(forKey: id) }
                leftover?.resume(throwing: CancellationError())
            }
            guard let frame = try await group.next() else { throw CancellationError() }
            return frame
        }
    }

    /// Closes the WebSocket.
    func close() {
        outbound.finish()
        finish(reason: "closed by the client")
    }

    deinit {
        outbound.finish()
        connectionTask.withLock { $0?.cancel() }
    }

    // MARK: - The connection

    private func open(
        target: WebSocketConnector.Target, credential: BridgeCredential?, pin: CertificatePin?, timeout: Duration, maxFrameSize: Int,
        pingInterval: Duration?, logger: Logger
    ) async throws {
        let connector = WebSocketConnector(timeout: timeout, maxMessageSize: maxFrameSize, pingInterval: pingInterval, logger: logger)
        let (opened, openedContinuation) = AsyncStream.makeStream(of: Result<Void, any Error>.self, bufferingPolicy: .bufferingNewest(1))
        let (outboundStream, url) = (self.outboundStream, self.url)
        // The task holds what it needs, never the link, so the link going away cancels it.
        let receive: @Sendable (String) -> Void = { [weak self] text in self?.receive(text) }
        let setPin: @Sendable (CertificatePin?) -> Void = { [weak self] pin in self?.state.withLock { $0.certificatePin = pin } }
        let finish: @Sendable (String) -> Void = { [weak self] reason in self?.finish(reason: reason) }
        let task = Task {
            do {
                let close = try await connector.connect(to: target, pin: pin, credential: credential) { connection in
                    setPin(connection.certificatePin)
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
                                case .text(let text): receive(text)
                                case .binary: logger.warning("ignoring a binary frame from the bridge; it speaks JSON text")
                                }
                            }
                        }
                        _ = try await group.next()
                        group.cancelAll()
                    }
                    return connection.closeFrame
                }
                finish(close.map { "closed by the bridge (\($0.code)\($0.reason.isEmpty ? "" : ": " + $0.reason))" } ?? "closed")
            } catch {
                openedContinuation.yield(.failure(error))
                finish("\(error)")
            }
            openedContinuation.finish()
        }
        connectionTask.withLock { $0 = task }
        let result: Result<Void, any Error>?
        do {
            result = try await WebSocketOpening.firstResult(of: opened, within: timeout, url: url)
        } catch {
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
            throw BridgeClientError.connectionClosed(closedReason ?? "before the WebSocket opened")
        }
    }

    /// Ends an open that failed or was cancelled.
    private func abandon() {
        close()
        connectionTask.withLock { $0?.cancel() }
    }

    private func receive(_ text: String) {
        guard case .single(.message(let message)) = JSONRPCFrame(parsing: text) else {
            incomingContinuation.yield(ACPRelayFrame(text: text, message: nil))
            return
        }
        if case .response(let response) = message,
           let waiter = state.withLock({ $0.waiting.removeValue(forKey: response.id) }) {
            waiter.resume(returning: ACPRelayFrame(text: text, message: message))
            return
        }
        incomingContinuation.yield(ACPRelayFrame(text: text, message: message))
    }

    private func finish(reason: String) {
        let waiting = state.withLock { state -> [CheckedContinuation<ACPRelayFrame, any Error>] in
            if state.closedReason == nil { state.closedReason = reason }
            defer { state.waiting.removeAll() }
            return Array(state.waiting.values)
        }
        for continuation in waiting {
            continuation.resume(throwing: BridgeClientError.connectionClosed(reason))
        }
        incomingContinuation.finish()
    }
}
