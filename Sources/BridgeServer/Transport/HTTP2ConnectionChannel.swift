import BridgeHTTP
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP2
import NIOHTTPTypes
import NIOHTTPTypesHTTP2

/// An HTTP/2 connection (ALPN `h2`, or h2c with prior knowledge; ``HTTP2ProtocolSelector`` decides): NIOHTTP2's
/// framing and its server connection manager, each stream an HTTP request served by the same responder as HTTP/1.1
/// (every `/api` route, `/app`, `/acp` POST, GET SSE and DELETE), after the same middleware.
///
/// Built the way Hummingbird 2's `HummingbirdHTTP2` builds its HTTP/2 channel (a connection manager, and per stream
/// `HTTP2FramePayloadToHTTPServerCodec` then Hummingbird's request loop), with the bridge's bounds:
///
/// - `SETTINGS_MAX_CONCURRENT_STREAMS` ``maxConcurrentStreams`` (NIOHTTP2 refuses a stream beyond it), the header
///   list no larger than HTTP/1.1's decoder takes;
/// - a connection with no open stream is closed after the HTTP idle timeout (GOAWAY first), a quiescing server sends
///   GOAWAY, closes a connection without open streams at once (``HTTP2QuiesceHandler``) and gives open streams
///   ``gracefulCloseTimeout``, a peer that answers no PING within ``keepalive``'s timeout is closed;
/// - each stream: ``HTTP2StreamGuard`` (its request within the request time bound, the body size limit, `HEAD`,
///   probation, no WebSocket) and ``StreamableHTTPStallHandler`` (a stream whose peer stops taking its response, an
///   SSE stream that is not read, is reset after the same time as on HTTP/1.1).
///
/// The WebSocket stays on HTTP/1.1: the bridge does not send `SETTINGS_ENABLE_CONNECT_PROTOCOL`, so an RFC 8441
/// client opens its WebSocket on an HTTP/1.1 connection, and a `CONNECT` on a stream is refused (`501`).
struct HTTP2ConnectionChannel: Sendable {
    /// The connection's streams as they open, each an HTTP request/response channel.
    typealias Multiplexer = NIOHTTP2Handler.AsyncStreamMultiplexer<NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>>

    /// The most streams a peer may have open at once on one connection (`SETTINGS_MAX_CONCURRENT_STREAMS`).
    ///
    /// One address may hold ``BridgeServerConfiguration/maxPendingConnectionsPerAddress`` connections that are
    /// not WebSockets; each HTTP/2 one is one of them.
    static let maxConcurrentStreams = 32
    /// How long open streams have to finish once the server quiesces (shutdown) before the connection closes.
    static let gracefulCloseTimeout = TimeAmount.seconds(2)
    /// A PING after this long without a frame from the peer; no answer within the timeout closes the connection.
    static let keepalive = NIOHTTP2ServerConnectionManagementHandler.Configuration.Keepalive(
        pingInterval: .seconds(60), ackTimeout: .seconds(20))

    /// The connection, and its streams as they open.
    struct Value: Sendable {
        let streams: Multiplexer
        let channel: any Channel
    }

    /// Serves each stream's request.
    let responder: HTTPChannelHandler.Responder
    /// How long a connection with no open stream stays open.
    let idleTimeout: TimeAmount?
    /// How long a stream may take to send its whole request (head and body).
    let requestTimeout: TimeAmount
    /// The largest request body.
    let maxBodySize: Int
    /// The largest header list (as HTTP/1.1's decoder).
    let maxHeaderListSize: Int

    /// Configures HTTP/2 on `channel` (already active, on its event loop); `probation` holds the `503` for a
    /// connection admitted on a reserve place (``ConnectionAdmission``), whose every stream gets it.
    func setup(channel: any Channel, probation: JSONErrorResponse?, logger: Logger) throws -> Value {
        var http2 = NIOHTTP2Handler.Configuration()
        http2.connection.initialSettings = [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: Self.maxConcurrentStreams),
            HTTP2Setting(parameter: .maxHeaderListSize, value: maxHeaderListSize),
        ]
        let manager = NIOHTTP2ServerConnectionManagementHandler.Configuration(
            maxIdleTime: idleTimeout, maxAge: nil, maxGraceTime: Self.gracefulCloseTimeout, keepalive: Self.keepalive)
        let stream = HTTP2RequestStream(
            responder: responder, requestTimeout: requestTimeout, maxBodySize: maxBodySize, probation: probation)
        let streams = try channel.pipeline.syncOperations.configureAsyncHTTP2Pipeline(
            mode: .server, connectionManagerConfiguration: manager, http2HandlerConfiguration: http2
        ) { streamChannel in
            stream.setup(channel: streamChannel, logger: logger)
        }
        try channel.pipeline.syncOperations.addHandler(HTTP2QuiesceHandler())
        return Value(streams: streams, channel: channel)
    }

    /// Serves the connection's streams, each in a task of its own, until the connection ends.
    func handle(value: Value, logger: Logger) async {
        let stream = HTTP2RequestStream(responder: responder, requestTimeout: requestTimeout, maxBodySize: maxBodySize, probation: nil)
        do {
            try await withThrowingDiscardingTaskGroup { group in
                for try await streamChannel in value.streams.inbound {
                    group.addTask {
                        await stream.handle(value: streamChannel, logger: logger)
                    }
                }
            }
        } catch {
            logger.debug("HTTP/2 connection ended", metadata: ["error": "\(error)"])
        }
    }
}

/// One HTTP/2 stream: one request and its response, through Hummingbird's request loop.
struct HTTP2RequestStream: HTTPChannelHandler {
    typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    let responder: HTTPChannelHandler.Responder
    let requestTimeout: TimeAmount
    let maxBodySize: Int
    /// The `503` every stream gets on a connection admitted on probation; `nil` on an ordinary place.
    let probation: JSONErrorResponse?

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let operations = channel.pipeline.syncOperations
            try operations.addHandler(HTTP2FramePayloadToHTTPServerCodec())
            try operations.addHandler(HTTP2StreamGuard(
                timeout: requestTimeout, maxBodySize: maxBodySize, busy: probation, logger: logger))
            try operations.addHandler(HTTPConnectionStateHandler(idleTimeout: nil, logger: logger))
            // A response (an SSE stream of /acp) whose peer stopped reading (its window stayed shut) resets the stream.
            try operations.addHandler(StreamableHTTPStallHandler())
            return try Value(wrappingChannelSynchronously: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        await handleHTTP(asyncChannel: value, logger: logger)
    }
}
