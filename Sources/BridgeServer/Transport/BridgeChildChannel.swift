import BridgeHTTP
import BridgePairing
import BridgeTLS
import BridgeWebSocketDeflate
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore

/// The one place where every accepted connection's pipeline is built: admission (``ConnectionAdmission``), then the
/// transport, then the time bound before the first answer (``ConnectionGuard``), then HTTP/1.1 with the WebSocket
/// upgrade. From the socket inwards:
///
/// 1. a refused connection gets only ``ConnectionRefusalHandler`` (503, close) and never reaches HTTP;
/// 2. transport security goes first, at the socket (issue 11: sniff the first byte, `0x16` → NIOSSL), added in
///    ``setup(channel:logger:)`` where marked, so everything after it sees plaintext;
/// 3. ``ConnectionGuard`` (each request, head and body, within ``BridgeServerConfiguration/requestHeadTimeout``);
/// 4. ``FlushCoalescer``; 5. HTTP/1.1 with the WebSocket upgrade (``BridgeUpgradeChannel``): ``HTTPEdgeHandler``
///    right after the request decoder, and on the not-upgraded path ``RefusalResponseHandler`` (shaped refusals of
///    upgrades) and Hummingbird's idle timeout; or HTTP/2 (``HTTP2ConnectionChannel``), which
///    ``HTTP2ProtocolSelector`` (between 2 and 3) chooses by ALPN `h2` or the h2c preface, and only then builds 5.
struct BridgeChildChannel: ServerChildChannel {
    /// What an admitted connection turned out to speak.
    enum Negotiated: Sendable {
        case http1(BridgeUpgradeChannel.Value)
        case http2(HTTP2ConnectionChannel.Value)
    }

    /// The inner channel's value once the protocol is known, or `nil` for a connection that was refused at admission.
    struct Value: ServerChildChannelValue {
        let inner: EventLoopFuture<Negotiated>?
        let channel: any Channel
        /// Whether TLS may offer ALPN `h2` (not to a refused connection, nor one on probation: those are answered, or
        /// upgraded to a WebSocket, over HTTP/1.1).
        let offersHTTP2: Bool
    }

    let inner: BridgeUpgradeChannel
    let http2: HTTP2ConnectionChannel
    let admission: ConnectionAdmission
    let refusals: UpgradeRefusals
    let requestHeadTimeout: Duration

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let address = channel.remoteAddress?.ipAddress.map(NetworkPolicy.host(fromRemoteAddress:)) ?? "unknown"
        let decision = admission.admit(address)
        if let refusal = decision.refusal {
            // Debug: a flood would otherwise write a line per refused connection.
            logger.debug("connection refused", metadata: ["remote": "\(address)", "reason": "\(refusal.code)"])
            let clock = self.refusals.clock
            return channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(ConnectionRefusalHandler(refusal: refusal, clock: clock))
                return Value(inner: nil, channel: channel, offersHTTP2: false)
            }
        }
        let admission = self.admission
        let refusals = self.refusals
        let channelID = ObjectIdentifier(channel)
        let negotiated = channel.eventLoop.makePromise(of: Negotiated.self)
        let selector = protocolSelector(
            channel: channel, probation: decision.isProbation, negotiated: negotiated, logger: logger)
        channel.closeFuture.whenComplete { _ in
            admission.closed()
            _ = refusals.take(channelID)
        }
        do {
            // A channel keeps its largest receive buffer for reuse while it lives: NIO's default first buffer (2 KB)
            // is most of what an idle WebSocket holds in buffers, while an upgrade request and the messages of an
            // idle phone fit in 512 bytes; a read that fills the buffer makes the next one larger (up to 64 KB).
            try channel.syncOptions?.setOption(ChannelOptions.recvAllocator, value: BridgeChildChannel.receiveAllocator)
            let operations = channel.pipeline.syncOperations
            // Transport security (issue 11) is added here, before everything else: `addHandler(…, position: .first)`
            // after the handlers below, or in this order before them.
            try operations.addHandler(selector)
            try operations.addHandler(ConnectionGuard(
                admission: admission, address: address, timeout: TimeAmount(requestHeadTimeout), logger: logger,
                probation: decision.isProbation))
            try operations.addHandler(FlushCoalescer())
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return channel.eventLoop.makeSucceededFuture(
            Value(inner: negotiated.futureResult, channel: channel, offersHTTP2: !decision.isProbation))
    }

    /// The selector that builds the pipeline for the protocol the connection speaks, and completes `negotiated`.
    private func protocolSelector(
        channel: any Channel, probation: Bool, negotiated: EventLoopPromise<Negotiated>, logger: Logger
    ) -> HTTP2ProtocolSelector {
        let inner = self.inner
        let http2 = self.http2
        let busy = probation ? admission.busy : nil
        return HTTP2ProtocolSelector(
            configure: { choice, _ in
                switch choice {
                case .http1:
                    // Completed at once: BridgeUpgradeChannel builds its handlers synchronously.
                    negotiated.completeWith(inner.setup(channel: channel, logger: logger).map(Negotiated.http1))
                case .http2:
                    let value = try http2.setup(channel: channel, probation: busy, logger: logger)
                    (try? channel.pipeline.syncOperations.handler(type: ConnectionGuard.self))?.servingHTTP2()
                    negotiated.succeed(.http2(value))
                }
            },
            failed: { negotiated.fail($0) })
    }

    /// The receive buffers of an accepted connection: they start at 512 bytes (NIO's default: 2 KB) and adapt.
    static let receiveAllocator = AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 512, maximum: 65536)

    func handle(value: Value, logger: Logger) async {
        guard let negotiated = value.inner else { return }
        let chosen: Negotiated
        do {
            chosen = try await negotiated.get()
        } catch {
            logger.trace("connection ended before it chose HTTP/1.1 or HTTP/2", metadata: ["error": "\(error)"])
            return
        }
        switch chosen {
        case .http1(let inner):
            await self.inner.handle(value: inner, logger: logger)
        case .http2(let connection):
            await http2.handle(value: connection, logger: logger)
        }
    }
}

extension HTTPServerBuilder {
    /// The bridge's server: HTTP/1.1 with WebSocket upgrade behind ``BridgeChildChannel``'s admission and time bounds;
    /// refused upgrades are answered with what the check decided (see ``UpgradeRefusals``).
    static func bridge(
        webSocketRouter: Router<BridgeWebSocketRequestContext>,
        configuration: BridgeServerConfiguration,
        admission: ConnectionAdmission,
        refusals: UpgradeRefusals,
        connect: @escaping BridgeUpgradeChannel.Connect
    ) -> HTTPServerBuilder {
        let webSocketResponder = webSocketRouter.buildResponder()
        let http1 = HTTP1Channel.Configuration(
            additionalChannelHandlers: [RefusalResponseHandler(refusals: refusals)],
            idleTimeout: TimeAmount(configuration.httpIdleTimeout))
        let requestHeadTimeout = configuration.requestHeadTimeout
        let identity = configuration.tlsIdentity
        let tailscale = configuration.tailscaleCertificates
        return .init { responder in
            // Issue 11: TLS and plaintext on the one port, told apart by the first byte (``TLSSniffingChannel``).
            let tls = try identity.map { identity throws(TLSSetupError) in try TLSServerContext(identity: identity, tailscale: tailscale) }
            let maxMessageSize = ClientConnection.readLimit(for: configuration.maxFrameSize)
            // Issue 28: HTTP/2 by ALPN `h2` or h2c prior knowledge, the same responder per stream.
            let http2 = HTTP2ConnectionChannel(
                responder: responder, idleTimeout: http1.idleTimeout, requestTimeout: TimeAmount(requestHeadTimeout),
                maxBodySize: maxMessageSize, maxHeaderListSize: http1.httpDecoder.maxHeaderListSize)
            return TLSSniffingChannel(
                base: BridgeChildChannel(
                    inner: BridgeUpgradeChannel(
                        responder: responder, webSocketResponder: webSocketResponder, http1: http1,
                        maxMessageSize: maxMessageSize,
                        deflate: configuration.compression ? PerMessageDeflateSettings() : nil, connect: connect),
                    http2: http2, admission: admission, refusals: refusals, requestHeadTimeout: requestHeadTimeout),
                tls: tls, timeout: TimeAmount(requestHeadTimeout))
        }
    }
}
