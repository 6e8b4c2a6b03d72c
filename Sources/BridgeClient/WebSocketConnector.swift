public import BridgeTLS
import BridgeWebSocketDeflate
public import Logging
public import NIOCore
import NIOHTTP1
public import NIOPosix
import NIOSSL
import NIOWebSocket
import Synchronization

/// Opens a WebSocket to a bridge by address, on SwiftNIO: a TCP connection to a resolved address (IPv4, IPv6, a
/// link-local IPv6 address with its zone), optional TLS checked against a pinned key, the HTTP/1.1 upgrade, then
/// WebSocket frames.
///
/// ```swift
/// let connector = WebSocketConnector(logger: logger)
/// let target = try WebSocketConnector.Target(url: "ws://[fe80::1%25eth0]:9099/")
/// try await connector.connect(to: target, token: token) { connection in
///     try await connection.send(text: request)
///     for try await message in connection.messages { … }
/// }
/// ```
///
/// The connection lives as long as the body runs and is closed when it returns or throws; a cancelled caller
/// closes it too, also while TCP, TLS or the upgrade are still under way. Failures before the body runs are
/// ``WebSocketConnectorError``s.
public struct WebSocketConnector: Sendable {
    /// How long TCP, TLS and the upgrade may take together.
    public var timeout: Duration
    /// The largest frame and the largest message accepted from the bridge.
    public var maxMessageSize: Int
    /// When set, a ping goes out this often and a connection whose bridge answered none of the previous ping is closed.
    public var pingInterval: Duration?
    let group: any EventLoopGroup
    private let logger: Logger

    /// Creates a connector.
    public init(
        timeout: Duration = .seconds(5), maxMessageSize: Int = 1 << 24, pingInterval: Duration? = nil,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, logger: Logger
    ) {
        self.timeout = timeout
        self.maxMessageSize = maxMessageSize
        self.pingInterval = pingInterval
        self.group = eventLoopGroup
        self.logger = logger
    }

    /// Connects to `target`, runs `body` with the open connection, then closes it.
    ///
    /// - Parameters:
    ///   - target: where to connect; `wss://` speaks TLS.
    ///   - pin: for `wss://`, the pin stored at pairing (`sha256/…`): a certificate with another key is refused with
    ///     ``WebSocketConnectorError/pinMismatch(expected:seen:)``. `nil` is trust on first use: any certificate is
    ///     accepted and its pin is ``Connection/certificatePin``, to show and to store.
    ///   - credential: the access token (never logged), sent as `Authorization: Bearer`, or, bound to a key
    ///     (``BridgeCredential/proofKey``), as `Authorization: DPoP` with a proof: tried once more with the bridge's
    ///     nonce when it asks for one (`use_dpop_nonce`), and once on the bridge's clock when it refused the proof
    ///     (`invalid_dpop_proof`) and its clock is seconds away from this one's.
    ///   - headers: more request header fields.
    ///   - body: what to do with the connection.
    /// - Returns: what `body` returns.
    /// - Throws: ``WebSocketConnectorError`` when the connection cannot be opened or is refused, or what `body` throws.
    public func connect<Result: Sendable>(
        to target: Target, pin: CertificatePin? = nil, credential: BridgeCredential? = nil, headers: [String: String] = [:],
        _ body: (Connection) async throws -> Result
    ) async throws -> Result {
        guard let credential, let binding = credential.proofKey else {
            var sent = headers
            if let credential { sent["Authorization"] = credential.authorization }
            return try await connectOnce(to: target, pin: pin, headers: sent, body).get()
        }
        let uri = DPoPClientBinding.uri(of: target)
        var bound = headers
        bound["Authorization"] = credential.authorization
        var retriedForNonce = false
        var retriedForClock = false
        while true {
            bound["DPoP"] = try await binding.proof(method: "GET", url: uri, accessToken: credential.accessToken)
            let outcome = try await connectOnce(to: target, pin: pin, headers: bound, body)
            guard case .refused(let refusal) = outcome else { return try outcome.get() }
            binding.noteNonce(refusal.dpopNonce)
            switch refusal.bridgeError.error {
            case "use_dpop_nonce" where !retriedForNonce && refusal.dpopNonce != nil:
                retriedForNonce = true
            case "invalid_dpop_proof" where !retriedForClock:
                // The bridge's clock: the refusal's `Date`, else its `/api/health` answer's.
                var date = refusal.date
                if date == nil { date = await serverDate(of: target, pin: pin) }
                guard binding.correctClock(byServerDate: date) else { return try outcome.get() }
                retriedForClock = true
            default:
                return try outcome.get()
            }
        }
    }

    /// Connects to `target` with `token` sent as `Authorization: Bearer` (see ``connect(to:pin:credential:headers:_:)``).
    public func connect<Result: Sendable>(
        to target: Target, pin: CertificatePin? = nil, token: String?, headers: [String: String] = [:],
        _ body: (Connection) async throws -> Result
    ) async throws -> Result {
        try await connect(to: target, pin: pin, credential: token.map(BridgeCredential.bearer), headers: headers, body)
    }

    /// The bridge's `Date` from `GET /api/health` (a bridge's upgrade refusal may carry none), or `nil`.
    private func serverDate(of target: Target, pin: CertificatePin?) async -> String? {
        let base = (target.isSecure ? "https://" : "http://") + target.authority
        return try? await requestOnce("GET", url: base + "/api/health", pin: pin).headers["date"]
    }

    /// How one attempt ended: `body`'s result, or the bridge's answer other than `101`.
    private enum Outcome<Result: Sendable> {
        case done(Result)
        case refused(Refusal)

        func get() throws -> Result {
            switch self {
            case .done(let result): return result
            case .refused(let refusal): throw WebSocketConnector.error(for: refusal)
            }
        }
    }

    /// One attempt of ``connect(to:pin:credential:headers:_:)`` with `headers` as they are.
    private func connectOnce<Result: Sendable>(
        to target: Target, pin: CertificatePin?, headers: [String: String], _ body: (Connection) async throws -> Result
    ) async throws -> Outcome<Result> {
        var logger = self.logger
        logger[metadataKey: "address"] = "\(target.displayAddress)"
        logger[metadataKey: "tls"] = "\(target.isSecure)"
        let attempt = Attempt(target: target, pin: pin, timeout: timeout)
        let context = try attempt.tlsContext()
        let request = WebSocketConnector.requestHead(target: target, headers: headers)
        let maxMessageSize = self.maxMessageSize
        let initializer: @Sendable (any Channel) -> EventLoopFuture<Pending> = { channel in
            channel.eventLoop.makeCompletedFuture {
                try attempt.configure(channel: channel, tls: context, request: request, maxFrameSize: maxMessageSize)
            }
        }
        let bootstrap = ClientBootstrap(group: group).connectTimeout(TimeAmount(timeout))
        logger.debug("websocket connecting")
        let pending: Pending
        do {
            if let address = try target.socketAddress() {
                pending = try await bootstrap.connect(to: address, channelInitializer: initializer)
            } else {
                pending = try await bootstrap.connect(host: target.host, port: target.port, channelInitializer: initializer)
            }
        } catch let error as WebSocketConnectorError {
            throw error
        } catch {
            throw attempt.classify(error)
        }
        let upgraded: NIOAsyncChannel<WebSocketFrame, WebSocketFrame>
        do {
            let result = try await withTaskCancellationHandler {
                try await pending.upgrade.get()
            } onCancel: {
                pending.channel.close(promise: nil)
            }
            switch result {
            case .upgraded(let channel):
                upgraded = channel
            case .refused(let refusal):
                let answer = try await refusal.get()
                pending.channel.close(promise: nil)
                logger.debug("websocket upgrade refused", metadata: ["status": "\(answer.status)"])
                return .refused(answer)
            }
        } catch let error as WebSocketConnectorError {
            pending.channel.close(promise: nil)
            throw error
        } catch {
            pending.channel.close(promise: nil)
            throw attempt.classify(error)
        }
        try Task.checkCancellation()
        logger.debug("websocket open", metadata: ["pin": "\(attempt.seenPin?.description ?? "-")"])
        let pingInterval = self.pingInterval
        return .done(try await upgraded.executeThenClose { inbound, _ in
            let connection = Connection(
                target: target, certificatePin: attempt.seenPin, channel: upgraded.channel,
                inbound: inbound, maxMessageSize: maxMessageSize)
            defer { connection.closeWithoutWaiting() }
            guard let pingInterval else { return try await body(connection) }
            return try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await WebSocketConnector.keepAlive(connection, every: pingInterval) }
                defer { group.cancelAll() }
                return try await body(connection)
            }
        })
    }

    /// Connects to the URL `url`; see ``connect(to:pin:credential:headers:_:)``.
    public func connect<Result: Sendable>(
        url: String, pin: CertificatePin? = nil, credential: BridgeCredential? = nil, headers: [String: String] = [:],
        _ body: (Connection) async throws -> Result
    ) async throws -> Result {
        try await connect(to: try Target(url: url), pin: pin, credential: credential, headers: headers, body)
    }

    /// Connects to the URL `url` with `token` as `Authorization: Bearer`; see ``connect(to:pin:credential:headers:_:)``.
    public func connect<Result: Sendable>(
        url: String, pin: CertificatePin? = nil, token: String?, headers: [String: String] = [:],
        _ body: (Connection) async throws -> Result
    ) async throws -> Result {
        try await connect(to: try Target(url: url), pin: pin, credential: token.map(BridgeCredential.bearer), headers: headers, body)
    }

    /// Pings every `interval`; closes the connection when the previous ping got no pong.
    static func keepAlive(_ connection: Connection, every interval: Duration) async {
        var pongsBefore = connection.pongsReceived
        var waiting = false
        while !Task.isCancelled {
            do { try await Task.sleep(for: interval) } catch { return }
            if waiting && connection.pongsReceived == pongsBefore {
                connection.abort()
                return
            }
            pongsBefore = connection.pongsReceived
            waiting = true
            do { try await connection.ping() } catch { return }
        }
    }

    /// The upgrade request: `Host` (an IPv6 zone as `%25`, RFC 6874), `Origin` as browsers and earlier clients
    /// send it, the permessage-deflate offer (RFC 7692), and `extra` (`Authorization`, `DPoP`, …).
    static func requestHead(target: Target, headers extra: [String: String]) -> HTTPRequestHead {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: target.authority)
        headers.add(name: "Origin", value: target.origin)
        headers.add(name: PerMessageDeflateNegotiation.headerName, value: PerMessageDeflateNegotiation.clientOffer)
        for (name, value) in extra.sorted(by: { $0.key < $1.key }) { headers.replaceOrAdd(name: name, value: value) }
        return HTTPRequestHead(version: .http1_1, method: .GET, uri: target.path, headers: headers)
    }

    /// The typed error for an answer other than `101`: a bridge's JSON `{"error","message"}` decoded.
    static func error(for refusal: Refusal) -> WebSocketConnectorError {
        let (code, message) = refusal.bridgeError
        if refusal.status == 403 && code == "tls_required" { return .tlsRequired(message: message) }
        return .upgradeRefused(status: refusal.status, error: code, message: message)
    }
}

extension WebSocketConnector {
    /// What the channel initializer hands back: the channel and the upgrade's outcome to come.
    struct Pending: Sendable {
        let channel: any Channel
        let upgrade: EventLoopFuture<UpgradeResult>
    }

    /// How the upgrade ended.
    enum UpgradeResult: Sendable {
        case upgraded(NIOAsyncChannel<WebSocketFrame, WebSocketFrame>)
        case refused(EventLoopFuture<Refusal>)
    }
}
