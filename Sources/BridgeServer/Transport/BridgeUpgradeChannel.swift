import BridgePairing
import BridgeWebSocketDeflate
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOWebSocket

/// HTTP/1.1 with the bridge's WebSocket upgrade: a request the WebSocket router answers `200 OK` is upgraded, and the
/// connection's frames are handled on its event loop by ``WebSocketConnectionHandler``, which hands whole messages to
/// the connection's task (``ClientMessages``); every other request goes to the HTTP responder.
///
/// The pipeline setup follows hummingbird-websocket's `HTTP1WebSocketUpgradeChannel`, whose WebSocket side ran a
/// task per connection that read the frames and handed each message to a second one (two hand-offs per message
/// instead of one; issue 14 goal 1). A refused upgrade gets an empty `400`, which ``RefusalResponseHandler`` (one of
/// `http1`'s additional handlers) turns into the refusal recorded for the channel.
struct BridgeUpgradeChannel: ServerChildChannel, HTTPChannelHandler {
    /// An upgraded connection: its channel, its messages, and what the upgrade learned (the peer's address, the
    /// paired device it authenticated as).
    ///
    /// The request context itself is not kept: it would stay with the connection.
    struct UpgradedConnection: Sendable {
        let channel: any Channel
        let messages: ClientMessages
        let remote: String?
        let device: AuthenticatedDevice?
    }

    /// Runs an upgraded connection until it ends.
    typealias Connect = @Sendable (UpgradedConnection) async -> Void

    /// What became of the connection's first request.
    enum UpgradeResult: Sendable {
        case webSocket(UpgradedConnection)
        case notUpgraded(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
        case failedUpgrade(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
    }

    /// The channel, and what its first request became once known.
    struct Value: ServerChildChannelValue {
        let upgradeResult: EventLoopFuture<UpgradeResult>
        let channel: any Channel
    }

    let responder: HTTPChannelHandler.Responder
    private let webSocketResponder: RouterResponder<BridgeWebSocketRequestContext>
    private let http1: HTTP1Channel.Configuration
    /// The largest frame and message read (``ClientConnection/readLimit(for:)``).
    private let maxMessageSize: Int
    /// permessage-deflate's settings, `nil` when it is declined (`--no-compression`).
    private let deflate: PerMessageDeflateSettings?
    private let connect: Connect

    /// A channel answering HTTP with `responder`, upgrading the requests `webSocketResponder` answers `200 OK`, and
    /// running each upgraded connection with `connect`.
    init(
        responder: @escaping HTTPChannelHandler.Responder,
        webSocketResponder: RouterResponder<BridgeWebSocketRequestContext>,
        http1: HTTP1Channel.Configuration,
        maxMessageSize: Int,
        deflate: PerMessageDeflateSettings? = PerMessageDeflateSettings(),
        connect: @escaping Connect
    ) {
        self.responder = BridgeUpgradeChannel.redirectingLateUpgrades(responder)
        self.webSocketResponder = webSocketResponder
        self.http1 = http1
        self.maxMessageSize = maxMessageSize
        self.deflate = deflate
        self.connect = connect
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let upgradeAttempted = NIOLoopBoundBox(false, eventLoop: channel.eventLoop)
            let accepted = NIOLoopBoundBox<BridgeWebSocketRequestContext?>(nil, eventLoop: channel.eventLoop)
            let webSocketResponder = self.webSocketResponder
            let maxMessageSize = self.maxMessageSize
            // permessage-deflate (RFC 7692): the first offer the bridge can take, chosen with the 101 and kept for the
            // connection's handler.
            let deflate = self.deflate
            let compression = NIOLoopBoundBox<PerMessageDeflateNegotiation.Acceptance?>(nil, eventLoop: channel.eventLoop)
            let upgrader = NIOTypedWebSocketServerUpgrader<UpgradeResult>(
                maxFrameSize: maxMessageSize,
                shouldUpgrade: { channel, head in
                    upgradeAttempted.value = true
                    let promise = channel.eventLoop.makePromise(of: BridgeWebSocketRequestContext?.self)
                    promise.completeWithTask {
                        let request = try HTTPRequest(head, secure: false, splitCookie: false)
                        let context = BridgeWebSocketRequestContext(source: .init(channel: channel, logger: logger))
                        // A thrown refusal was recorded for the channel (UpgradeRefusals): not upgraded.
                        guard let response = try? await webSocketResponder.respond(
                            to: Request(head: request, body: .init(buffer: ByteBuffer())), context: context),
                            response.status == .ok
                        else { return nil }
                        return context
                    }
                    let offers = head.headers[PerMessageDeflateNegotiation.headerName]
                    return promise.futureResult.map { context in
                        accepted.value = context
                        guard context != nil else { return nil }
                        // ACP's remote-transport RFD: the 101 names the connection (`Acp-Connection-Id`).
                        var headers = HTTPHeaders([("Acp-Connection-Id", UUID().uuidString.lowercased())])
                        if let deflate, let acceptance = PerMessageDeflateNegotiation.accept(offers: offers, settings: deflate) {
                            compression.value = acceptance
                            headers.add(name: PerMessageDeflateNegotiation.headerName, value: acceptance.responseHeader)
                            logger.debug("permessage-deflate negotiated", metadata: ["answer": "\(acceptance.responseHeader)"])
                        }
                        return headers
                    }
                },
                upgradePipelineHandler: { channel, _ in
                    channel.eventLoop.makeCompletedFuture {
                        guard let context = accepted.value else { throw BridgeUpgradeChannelError.notAccepted }
                        accepted.value = nil
                        // Hummingbird allows half-closure for HTTP; a WebSocket ends with its close handshake. With it
                        // allowed, NIOSSL closing a connection took the peer's `close_notify` for a half-close and
                        // waited its shutdown timeout (5 s) before closing TCP, and the peer waited with it.
                        try channel.syncOptions?.setOption(ChannelOptions.allowRemoteHalfClosure, value: false)
                        let operations = channel.pipeline.syncOperations
                        if let edges = try? operations.handler(type: HTTPEdgeHandler.self) {
                            operations.removeHandler(edges, promise: nil)
                        }
                        (try? operations.handler(type: ConnectionGuard.self))?.upgraded()
                        // The connection's writer (OutboundQueue) flushes once per batch already; the flush coalescer
                        // only cost a job on the event loop per answer (issue 32).
                        if let coalescer = try? operations.handler(type: FlushCoalescer.self) {
                            operations.removeHandler(coalescer, promise: nil)
                        }
                        let messages = ClientMessages()
                        try channel.pipeline.syncOperations.addHandler(WebSocketConnectionHandler(
                            messages: messages, maxMessageSize: maxMessageSize,
                            closeTimeout: TimeAmount(ClientConnection.closeTimeout),
                            deflate: compression.value?.parameters, settings: deflate ?? PerMessageDeflateSettings()))
                        compression.value = nil
                        return .webSocket(UpgradedConnection(
                            channel: channel, messages: messages, remote: context.remoteAddress?.ipAddress,
                            device: context.upgradeOutcome.device))
                    }
                })
            let http1 = self.http1
            let upgrade = NIOTypedHTTPServerUpgradeConfiguration(
                upgraders: [upgrader],
                notUpgradingCompletionHandler: { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let operations = channel.pipeline.syncOperations
                        try operations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
                        try operations.addHandlers(http1.additionalChannelHandlers())
                        try operations.addHandler(HTTPConnectionStateHandler(
                            idleTimeout: http1.idleTimeout.map { Duration($0) }, logger: logger))
                        // A response (an SSE stream of /acp) whose peer stopped reading closes the connection.
                        try operations.addHandler(StreamableHTTPStallHandler())
                        let asyncChannel = try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
                            wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
                        return upgradeAttempted.value ? .failedUpgrade(asyncChannel) : .notUpgraded(asyncChannel)
                    }
                })
            var configuration = NIOUpgradableHTTPServerPipelineConfiguration<UpgradeResult>(upgradeConfiguration: upgrade)
            configuration.enablePipelining = false  // NIOAsyncChannel takes one request at a time
            configuration.enableErrorHandling = false  // Hummingbird answers errors
            configuration.enableResponseHeaderValidation = false  // HTTPTypes validated them
            configuration.decoderConfiguration.maxHeaderFieldSize = http1.httpDecoder.maxHeaderFieldSize
            configuration.decoderConfiguration.maxHeaderListSize = http1.httpDecoder.maxHeaderListSize
            configuration.decoderConfiguration.maxHeaderFieldCount = http1.httpDecoder.maxHeaderFieldCount
            let operations = channel.pipeline.syncOperations
            let result = try operations.configureUpgradableHTTPServerPipeline(configuration: configuration)
            // Every request's edges (issue 26), right after the decoder: before the upgrade and Hummingbird.
            let decoder = try operations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try operations.addHandler(
                HTTPEdgeHandler(maxBodySize: maxMessageSize, connectionGuard: try? operations.handler(type: ConnectionGuard.self)),
                position: .after(decoder))
            return Value(upgradeResult: result, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.upgradeResult.get() {
            case .notUpgraded(let http1):
                await handleHTTP(asyncChannel: http1, logger: logger)
            case .failedUpgrade(let http1):
                await BridgeUpgradeChannel.refuse(http1, logger: logger)
            case .webSocket(let connection):
                await connect(connection)
            }
        } catch let error as ChannelError where error == .inputClosed {
            logger.trace("connection closed before its first request")
        } catch {
            logger.debug("connection failed before its first request", metadata: ["error": "\(error)"])
        }
    }

    /// The answer to a refused upgrade: an empty `400` that ``RefusalResponseHandler`` rewrites.
    private static func refuse(_ http1: NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>, logger: Logger) async {
        do {
            try await http1.executeThenClose { _, outbound in
                let head = HTTPResponse(status: .badRequest, headerFields: [.connection: "close", .contentLength: "0"])
                try await outbound.write(contentsOf: [.head(head), .end(nil)])
            }
        } catch {
            logger.trace("refused upgrade not written", metadata: ["error": "\(error)"])
        }
    }

    /// An upgrade asked for on a connection that already served HTTP is answered with a redirect to the same URI and
    /// a close (NIO upgrades only a connection's first request), as Hummingbird does: the client retries on a new one.
    private static func redirectingLateUpgrades(_ responder: @escaping HTTPChannelHandler.Responder) -> HTTPChannelHandler.Responder {
        { request, writer, channel in
            guard request.headers[.upgrade] == "websocket" else {
                return try await responder(request, writer, channel)
            }
            var path = request.uri.path
            if let query = request.uri.query { path += "?\(query)" }
            try await writer.writeResponse(HTTPResponse(status: .temporaryRedirect, headerFields: [.connection: "close", .location: path]))
            throw BridgeUpgradeChannelError.lateUpgrade
        }
    }
}

/// Why an upgrade did not happen (internal: logged at debug, never shown to a peer).
enum BridgeUpgradeChannelError: Error {
    /// The upgrade ran without an accepted request (NIO calls the pipeline handler only after `shouldUpgrade` said
    /// yes; this guards the hand-over between the two).
    case notAccepted
    /// An upgrade on a connection that already served HTTP; it was redirected and is closed.
    case lateUpgrade
}
