import BridgeWebSocketDeflate
import NIOCore
import NIOWebSocket

/// The WebSocket protocol of one upgraded client connection, on its event loop: it assembles messages from frames,
/// answers pings and the close handshake, refuses what RFC 6455 forbids, and hands each whole message to the
/// connection's task through ``ClientMessages`` (one hand-off per message; issue 14 goal 1: Hummingbird's WebSocket
/// handler took two, through a task of its own).
///
/// Rules (the same as swift-websocket's server handler, which this replaces):
/// - client frames must be masked, with no reserved bits; reserved opcodes, a continuation without a message, a new
///   message inside a fragmented one and a fragmented control frame close with 1002;
/// - a message over `maxMessageSize` closes with 1009 (a single frame over it is refused by the frame decoder), and so
///   does one in more than ``maxFragments`` frames;
/// - a text message is checked for UTF-8 fragment by fragment as it arrives (``UTF8StreamValidator``; a character may
///   be split between fragments): the first invalid byte fails the connection with 1007 at once (RFC 6455 §8.1), and
///   nothing of that message is delivered;
/// - a ping is answered with a pong of the same payload; pongs go on to ``WebSocketKeepalive`` before it;
/// - a close from the peer is answered (1000, or 1002 for an invalid code or reason) and the connection closed;
/// - a close the bridge sends (any close frame written through the pipeline) stops delivery, and no frame written
///   through this handler follows it (RFC 6455 §5.5.1: an answer to an earlier message is dropped, its write failed
///   with `ChannelError.outputClosed`); the peer's answering close then closes the connection (``ConnectionCloser``
///   closes it if none comes).
///
/// permessage-deflate (RFC 7692), when the upgrade negotiated it (``BridgeUpgradeChannel``):
/// - RSV1 is allowed on the first frame of a text or binary message only (a continuation or a control frame with it,
///   or any RSV1 without the extension, closes with 1002); such a message is inflated fragment by fragment, each
///   fragment before its UTF-8 check, by ``PerMessageDeflateInflater`` with the same `maxMessageSize` bound on the
///   inflated bytes (a zip bomb closes with 1009 having inflated at most the limit); data that is not deflate closes
///   with 1007. The client was asked for `client_no_context_takeover`, so the inflater lives only during a message;
/// - whole text and binary messages written through the handler of at least
///   ``PerMessageDeflateSettings/minimumSize`` bytes go out compressed with RSV1 (``PerMessageDeflateCompressor``,
///   small windows); control frames never. The compressor is kept for the context takeover while messages flow, and
///   released once no message was compressed for an ``compressorIdleRelease`` period (an idle connection holds none).
///
/// Reassembly costs time and memory linear in the message: fragments are appended in place to one buffer (amortised
/// doubling), at most ``maxFragments`` of them and `maxMessageSize` bytes.
///
/// Backpressure, both ways (issue 27.4, a paired client's budgets):
/// - while ``ClientMessages/highWater`` messages wait for the connection's task, the handler holds reads from the
///   socket; the task resumes them once it is down to ``ClientMessages/lowWater``;
/// - while the channel is not writable (the client does not take what is written to it: more than the channel's
///   high-water mark, 64 KiB by default, waits in it), reads are held too, so a client that sends without reading
///   cannot make the bridge produce answers or pongs it does not take; they resume once it is writable again.
///   Pings read meanwhile get one pong, for the latest (RFC 6455 §5.5.3 allows that), sent when writable again.
final class WebSocketConnectionHandler: ChannelDuplexHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    /// The most frames one message may come in (its first frame and its continuations): 131,072, twice what
    /// Autobahn|Testsuite's largest fragmented case sends (4 MiB in 64-byte fragments).
    ///
    /// Reassembly is linear, so this bounds the per-frame work of one message (a frame costs at least 7 bytes on the
    /// wire) besides its size.
    static let maxFragments = 1 << 17
    /// After a period this long with nothing compressed, the compressor is released (then freed within two periods of
    /// the last compressed message): a streamed answer keeps it (updates come milliseconds apart), a connection that
    /// went quiet holds none after 4 s (its `initialize` answer made one).
    static let compressorIdleRelease = TimeAmount.seconds(2)

    private let messages: ClientMessages
    private let maxMessageSize: Int
    private let closeTimeout: TimeAmount
    /// The opcode of the message being assembled from fragments (`nil` between messages).
    private var assembling: WebSocketOpcode?
    /// Its bytes so far (stored on its own and changed in place, so appending never copies what came before).
    private var assembled = ByteBuffer()
    /// Its frames so far.
    private var fragmentCount = 0
    /// The UTF-8 check of the text message being assembled.
    private var utf8 = UTF8StreamValidator()
    /// A pong owed for a ping read while the channel was not writable (the latest ping's payload).
    private var pendingPong: ByteBuffer?
    /// A close frame went out (the bridge's, or the answer to the peer's).
    private var closeSent = false
    /// A read was asked for while too many messages waited.
    private var readHeld = false
    private var closeTimer: Scheduled<Void>?
    private var context: ChannelHandlerContext?
    /// permessage-deflate's sending side (`nil` without the extension).
    private let compressor: PerMessageDeflateCompressor?
    /// Its receiving side (`nil` without the extension).
    private let inflater: PerMessageDeflateInflater?
    /// Whether the message being assembled came compressed.
    private var compressedMessage = false
    /// A message was compressed since the idle timer last looked.
    private var compressedSinceCheck = false
    private var idleTimer: Scheduled<Void>?
    private let idleRelease: TimeAmount

    /// A handler delivering into `messages`, closing with 1009 beyond `maxMessageSize` bytes; after a close it sent
    /// itself (a protocol error), it waits `closeTimeout` for the peer's answer.
    ///
    /// With `deflate` (what the upgrade negotiated), messages are compressed and inflated as RFC 7692 says, with
    /// `settings`' windows; the compressor is released after `idleRelease` without a compressed message.
    init(messages: ClientMessages, maxMessageSize: Int, closeTimeout: TimeAmount,
         deflate: PerMessageDeflateParameters? = nil, settings: PerMessageDeflateSettings = .init(),
         idleRelease: TimeAmount = WebSocketConnectionHandler.compressorIdleRelease) {
        self.messages = messages
        self.maxMessageSize = maxMessageSize
        self.closeTimeout = closeTimeout
        self.compressor = deflate.map {
            PerMessageDeflateCompressor(windowBits: $0.serverMaxWindowBits, noContextTakeover: $0.serverNoContextTakeover, settings: settings)
        }
        self.inflater = deflate.map { PerMessageDeflateInflater(noContextTakeover: $0.clientNoContextTakeover) }
        self.idleRelease = idleRelease
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        messages.onLowWater = { [eventLoop = context.eventLoop] in
            eventLoop.execute { loopBound.value.resumeReading() }
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        closeTimer?.cancel()
        closeTimer = nil
        idleTimer?.cancel()
        idleTimer = nil
        compressor?.release()
        self.context = nil
        // The low-water closure holds this handler, and the handler holds `messages`: without this the pair (with the
        // stream's storage, about 490 bytes) outlived every connection (issue 25 item 7).
        messages.onLowWater = nil
        messages.finish()
    }

    func channelInactive(context: ChannelHandlerContext) {
        closeTimer?.cancel()
        closeTimer = nil
        idleTimer?.cancel()
        idleTimer = nil
        compressor?.release()
        messages.finish()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // The frame decoder's errors were answered by NIO's protocol error handler before this one; anything else
        // (a reset, a TLS failure) ends the connection.
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        // RSV1 marks a compressed message's first frame, and only with permessage-deflate (RFC 7692 §6.1).
        let startsMessage = frame.opcode == .text || frame.opcode == .binary
        guard frame.maskKey != nil, frame.reservedBits.subtracting(.rsv1).isEmpty,
              !frame.rsv1 || (inflater != nil && startsMessage)
        else {
            return fail(context, .protocolError)
        }
        switch frame.opcode {
        case .text, .binary:
            guard assembling == nil else { return fail(context, .protocolError) }
            guard !closeSent else { return }
            compressedMessage = frame.rsv1
            guard let data = payload(of: frame, context, inflatedBefore: 0) else { return }
            guard data.readableBytes <= maxMessageSize else { return fail(context, .messageTooLarge) }
            if frame.opcode == .text {
                utf8 = UTF8StreamValidator()
                guard utf8.validate(data), !frame.fin || utf8.isComplete else {
                    return fail(context, .dataInconsistentWithMessage, "invalid UTF-8 in a text message")
                }
            }
            if frame.fin {
                deliver(frame.opcode, data)
            } else {
                assembling = frame.opcode
                assembled = data
                fragmentCount = 1
            }
        case .continuation:
            guard let opcode = assembling else { return fail(context, .protocolError) }
            guard !closeSent else { return }
            guard var more = payload(of: frame, context, inflatedBefore: assembled.readableBytes) else { return }
            guard assembled.readableBytes + more.readableBytes <= maxMessageSize else { return fail(context, .messageTooLarge) }
            fragmentCount += 1
            guard fragmentCount <= Self.maxFragments else {
                return fail(context, .messageTooLarge, "more than \(Self.maxFragments) fragments in a message")
            }
            if opcode == .text {
                guard utf8.validate(more), !frame.fin || utf8.isComplete else {
                    return fail(context, .dataInconsistentWithMessage, "invalid UTF-8 in a text message")
                }
            }
            assembled.writeBuffer(&more)
            if frame.fin {
                let data = assembled
                resetAssembly()
                deliver(opcode, data)
            }
        case .ping:
            guard frame.fin else { return fail(context, .protocolError) }
            guard !closeSent else { return }
            if context.channel.isWritable {
                context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
            } else {
                pendingPong = frame.unmaskedData
            }
        case .pong:
            break
        case .connectionClose:
            receivedClose(context, frame.unmaskedData)
        default:
            fail(context, .protocolError)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if !closeSent, let compressor {
            var frame = unwrapOutboundIn(data)
            if frame.fin, frame.opcode == .text || frame.opcode == .binary, frame.reservedBits.isEmpty,
               compressor.shouldCompress(size: frame.data.readableBytes) {
                do {
                    frame.data = try compressor.compress(frame.data, allocator: context.channel.allocator)
                    frame.rsv1 = true
                    compressedSinceCheck = true
                    scheduleIdleRelease(context)
                } catch {
                    // Sent as it is: the failed compressor was released, so the next compressed message starts afresh
                    // and the client's inflater lacks nothing.
                }
                return context.write(wrapOutboundOut(frame), promise: promise)
            }
        }
        if closeSent {
            // Nothing follows the bridge's close (RFC 6455 §5.5.1). A second close (the hub's, after the handler's
            // own) is done already: it succeeds, so its sender waits for the peer's answer as usual.
            if unwrapOutboundIn(data).opcode == .connectionClose {
                promise?.succeed()
            } else {
                promise?.fail(ChannelError.outputClosed)
            }
            return
        }
        if unwrapOutboundIn(data).opcode == .connectionClose {
            closeSent = true
            pendingPong = nil
            resetAssembly()
        }
        context.write(data, promise: promise)
    }

    func read(context: ChannelHandlerContext) {
        if messages.holdReads() || !context.channel.isWritable {
            readHeld = true
        } else {
            context.read()
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            if let pong = pendingPong {
                pendingPong = nil
                context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: pong)), promise: nil)
            }
            resumeReading()
        }
        context.fireChannelWritabilityChanged()
    }

    /// Reads again after ``read(context:)`` held them (the connection's task took enough messages, or the channel is
    /// writable again), unless a reason to hold them remains.
    private func resumeReading() {
        guard readHeld, let context else { return }
        readHeld = false
        read(context: context)
    }

    private func resetAssembly() {
        assembling = nil
        assembled = ByteBuffer()
        fragmentCount = 0
        if compressedMessage {
            compressedMessage = false
            inflater?.release()
        }
    }

    /// A data frame's payload as the message's bytes: unmasked, and inflated when the message came compressed (at most
    /// `maxMessageSize` bytes in all, `inflatedBefore` of them in earlier fragments).
    ///
    /// `nil` when it failed the connection.
    private func payload(of frame: WebSocketFrame, _ context: ChannelHandlerContext, inflatedBefore: Int) -> ByteBuffer? {
        guard compressedMessage, let inflater else { return frame.unmaskedData }
        do {
            return try inflater.inflate(frame.unmaskedData, isFinal: frame.fin, limit: maxMessageSize - inflatedBefore,
                                        allocator: context.channel.allocator)
        } catch {
            compressedMessage = false
            switch error {
            case .messageTooLarge: fail(context, .messageTooLarge, "a compressed message inflates past \(maxMessageSize) bytes")
            case .invalidCompressedData: fail(context, .dataInconsistentWithMessage, "invalid compressed data")
            case .zlibFailure, .invalidResponse: fail(context, .unexpectedServerError)
            }
            return nil
        }
    }

    /// Releases the compressor once a whole ``idleRelease`` period passed without a compressed message.
    private func scheduleIdleRelease(_ context: ChannelHandlerContext) {
        guard idleTimer == nil else { return }
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        idleTimer = context.eventLoop.scheduleTask(in: idleRelease) { loopBound.value.idleCheck() }
    }

    private func idleCheck() {
        idleTimer = nil
        guard let context else { return }
        if compressedSinceCheck {
            compressedSinceCheck = false
            scheduleIdleRelease(context)
        } else {
            compressor?.release()
        }
    }

    private func deliver(_ opcode: WebSocketOpcode, _ data: ByteBuffer) {
        // After a close went out the peer's data is not read (RFC 6455 §5.5.1).
        guard !closeSent else { return }
        messages.yield(opcode == .text ? .text(data) : .binary(data))
    }

    private func receivedClose(_ context: ChannelHandlerContext, _ payload: ByteBuffer) {
        messages.finish()
        if closeSent {
            // The answer to the bridge's close: done.
            context.close(promise: nil)
            return
        }
        var payload = payload
        let size = payload.readableBytes
        let code = payload.readWebSocketErrorCode()
        let reasonValid = String(validating: payload.readableBytesView, as: UTF8.self) != nil
        var answer = WebSocketErrorCode.normalClosure
        if size == 1 || !reasonValid {
            answer = .protocolError
        } else if case .unknown(let raw) = code, raw < 3000 || raw > 4999 {
            answer = .protocolError
        }
        sendClose(context, answer)
        context.close(promise: nil)
    }

    /// Answers a protocol violation: a close with `code`, then the connection closes when the peer answers it or
    /// after the close timeout.
    private func fail(_ context: ChannelHandlerContext, _ code: WebSocketErrorCode, _ reason: String = "") {
        messages.finish()
        guard !closeSent else { return }
        sendClose(context, code, reason)
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        closeTimer = context.eventLoop.scheduleTask(in: closeTimeout) { loopBound.value.close(promise: nil) }
    }

    private func sendClose(_ context: ChannelHandlerContext, _ code: WebSocketErrorCode, _ reason: String = "") {
        var payload = context.channel.allocator.buffer(capacity: 2 + reason.utf8.count)
        payload.write(webSocketErrorCode: code)
        payload.writeString(reason)
        // Through this handler's own write: it marks the close sent.
        write(context: context, data: wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: payload)), promise: nil)
        context.flush()
    }
}
