public import NIOCore
public import NIOWebSocket

/// permessage-deflate for a WebSocket client's pipeline, between the frame codec and the code reading frames: compressed
/// messages arrive inflated (RSV1 cleared), and whole text or binary messages the client writes leave compressed.
///
/// The client compresses each message on its own (it offered `client_no_context_takeover`) and frees the stream at
/// once; it inflates with one stream kept for the connection, unless the server said `server_no_context_takeover`.
/// A message that would inflate past `maxMessageSize`, or that is not valid deflate data, closes the connection with
/// 1009 or 1007 and fires the ``PerMessageDeflateError``.
public final class PerMessageDeflateClientHandler: ChannelDuplexHandler, RemovableChannelHandler {
    /// Frames from the WebSocket decoder, compressed or not.
    public typealias InboundIn = WebSocketFrame
    /// Frames to the code reading the connection, inflated.
    public typealias InboundOut = WebSocketFrame
    /// Frames the client writes, whole messages uncompressed.
    public typealias OutboundIn = WebSocketFrame
    /// Frames to the WebSocket encoder, text and binary messages compressed.
    public typealias OutboundOut = WebSocketFrame

    private let compressor: PerMessageDeflateCompressor?
    private let inflater: PerMessageDeflateInflater
    private let maxMessageSize: Int
    /// Whether the message being received is compressed, and its inflated bytes so far.
    private var inflating: Bool?
    private var inflatedSize = 0
    private var failed = false

    /// A handler for what the server's answer settled (``PerMessageDeflateNegotiation/clientAccept(response:)``).
    public init(parameters: PerMessageDeflateParameters, maxMessageSize: Int, settings: PerMessageDeflateSettings = .init()) {
        // zlib makes no 8-bit raw stream: with a server that allows only 8 bits, the client sends uncompressed.
        self.compressor = parameters.clientMaxWindowBits >= 9
            ? PerMessageDeflateCompressor(windowBits: parameters.clientMaxWindowBits, noContextTakeover: true, settings: settings)
            : nil
        self.inflater = PerMessageDeflateInflater(noContextTakeover: parameters.serverNoContextTakeover)
        self.maxMessageSize = maxMessageSize
    }

    /// Inflates a compressed message (RSV1 set) and passes it on with RSV1 cleared; control frames and uncompressed
    /// messages pass as they are.
    ///
    /// Too large or invalid data closes the connection (1009 or 1007).
    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        var frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text, .binary:
            inflating = frame.rsv1
            inflatedSize = 0
        case .continuation:
            break
        default:
            return context.fireChannelRead(data)
        }
        guard inflating == true else {
            if frame.fin { inflating = nil }
            return context.fireChannelRead(data)
        }
        do {
            let inflated = try inflater.inflate(frame.unmaskedData, isFinal: frame.fin, limit: maxMessageSize - inflatedSize,
                                                allocator: context.channel.allocator)
            inflatedSize += inflated.readableBytes
            frame.data = inflated
            frame.maskKey = nil
            frame.rsv1 = false
            if frame.fin { inflating = nil }
            context.fireChannelRead(wrapInboundOut(frame))
        } catch {
            fail(context, error)
        }
    }

    /// Compresses a whole text or binary message and sets RSV1; control frames and fragments pass as they are.
    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        var frame = unwrapOutboundIn(data)
        guard let compressor, frame.fin, frame.opcode == .text || frame.opcode == .binary, frame.reservedBits.isEmpty,
              compressor.shouldCompress(size: frame.data.readableBytes)
        else {
            return context.write(data, promise: promise)
        }
        do {
            frame.data = try compressor.compress(frame.data, allocator: context.channel.allocator)
            frame.rsv1 = true
            compressor.release()
        } catch {
            // Sent as it is: a compressor released after a failure leaves nothing the server lacks.
        }
        context.write(wrapOutboundOut(frame), promise: promise)
    }

    private func fail(_ context: ChannelHandlerContext, _ error: PerMessageDeflateError) {
        failed = true
        var payload = context.channel.allocator.buffer(capacity: 2)
        if case .messageTooLarge = error { payload.write(webSocketErrorCode: .messageTooLarge) } else {
            payload.write(webSocketErrorCode: .dataInconsistentWithMessage)
        }
        let close = WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: payload)
        context.writeAndFlush(wrapOutboundOut(close)).whenComplete { [channel = context.channel] _ in channel.close(promise: nil) }
        context.fireErrorCaught(error)
    }
}
