import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket

/// Bare SwiftNIO WebSocket echo, below Hummingbird: `--mode loop` answers in the channel handler on the event loop
/// (no task at all); `--mode task` hands each message to a task per connection and writes the answer back through
/// the event loop (one hand-off each way, as a server whose logic lives in Swift concurrency must).
///
/// With `--cert FILE --key FILE` (issue 32) it serves wss:// only: a `NIOSSLServerHandler` first in every pipeline,
/// configured as the bridge's `TLSServerContext` is (TLS 1.2–1.3, the same suites, ALPN http/1.1): the limit of the
/// stack the bridge's TLS runs on.
func runNIOEcho(_ args: Args) async throws {
    _ = raiseFileLimit(args.int("nofile", 65536))
    let port = args.int("port", 9197)
    let onLoop = (args.values["mode"] ?? "task") == "loop"
    let sslContext = try benchServerTLSContext(certificate: args.values["cert"], key: args.values["key"])
    let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .serverChannelOption(ChannelOptions.backlog, value: 4096)
        .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
        .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
        .childChannelInitializer { channel in
            if let sslContext {
                do {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
            let upgrader = NIOWebSocketServerUpgrader(
                maxFrameSize: 1 << 20,
                shouldUpgrade: { channel, _ in channel.eventLoop.makeSucceededFuture(HTTPHeaders()) },
                upgradePipelineHandler: { channel, _ in
                    channel.eventLoop.makeCompletedFuture {
                        if onLoop {
                            try channel.pipeline.syncOperations.addHandler(EchoOnLoopHandler())
                        } else {
                            let (stream, continuation) = AsyncStream<ByteBuffer>.makeStream()
                            try channel.pipeline.syncOperations.addHandler(EchoToTaskHandler(messages: continuation))
                            Task {
                                for await message in stream {
                                    channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, data: message), promise: nil)
                                }
                            }
                        }
                    }
                })
            return channel.pipeline.configureHTTPServerPipeline(
                withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in }))
        }
    let server = try await bootstrap.bind(host: "127.0.0.1", port: port).get()
    emit(["listening": port])
    try await server.closeFuture.get()
}

/// Answers a text frame with the same text, on the event loop.
private final class EchoOnLoopHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text, .binary:
            context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: frame.opcode, data: frame.unmaskedData)), promise: nil)
        case .ping:
            context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
        case .connectionClose:
            // Answer the close (RFC 6455 5.5.1) before closing: a client that waits for it (`bench reconnect`) would
            // otherwise wait for ever.
            let close = WebSocketFrame(fin: true, opcode: .connectionClose, data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(close)).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
    }
}

/// Passes text frames to a task.
private final class EchoToTaskHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame
    let messages: AsyncStream<ByteBuffer>.Continuation

    init(messages: AsyncStream<ByteBuffer>.Continuation) {
        self.messages = messages
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text, .binary:
            messages.yield(frame.unmaskedData)
        case .connectionClose:
            context.close(promise: nil)
        default:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        messages.finish()
        context.fireChannelInactive()
    }
}
