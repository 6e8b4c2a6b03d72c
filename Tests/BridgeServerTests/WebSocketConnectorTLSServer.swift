import BridgeTLS
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket

/// A WebSocket echo server on 127.0.0.1 behind TLS, with a bridge identity made by ``BridgeIdentity`` (self-signed,
/// ECDSA P-256), until the bridge itself speaks TLS: an upgrade with `Authorization: Bearer good` opens and every
/// text message comes back; any other request gets the bridge's `401 token_missing` JSON.
enum TLSTestServer {
    /// The token the server accepts.
    static let goodToken = "good"

    /// Echoes text frames; answers a close frame and closes.
    private final class Echo: ChannelInboundHandler, Sendable {
        typealias InboundIn = WebSocketFrame
        typealias OutboundOut = WebSocketFrame

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let frame = unwrapInboundIn(data)
            switch frame.opcode {
            case .text:
                context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: frame.unmaskedData)), promise: nil)
            case .connectionClose:
                let channel = context.channel
                context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: frame.unmaskedData)))
                    .whenComplete { _ in channel.close(promise: nil) }
            default:
                break
            }
        }
    }

    /// Answers a request that was not upgraded with a bridge-style 401.
    private final class Unauthorized: ChannelInboundHandler, RemovableChannelHandler, Sendable {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard case .end = unwrapInboundIn(data) else { return }
            let body = #"{"error":"token_missing","message":"send a token"}"#
            var headers = HTTPHeaders([("Content-Type", "application/json"), ("Connection", "close")])
            headers.add(name: "Content-Length", value: "\(body.utf8.count)")
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .unauthorized, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: body)))), promise: nil)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
        }
    }

    /// Runs the server for the duration of `body`, with a fresh identity in a temporary directory.
    static func with<T: Sendable>(_ body: (_ port: Int, _ pin: CertificatePin) async throws -> T) async throws -> T {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("oa-bridge-tls-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let identity = try BridgeIdentity.loadOrCreate(in: directory, names: BridgeIdentityNames(hostName: "test-desk", addresses: ["127.0.0.1"]))
        let configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: identity.certificateDER, format: .der))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(identity.privateKeyPEM.utf8), format: .pem)))
        let context = try NIOSSLContext(configuration: configuration)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let unauthorized = Unauthorized()
                    let upgrader = NIOWebSocketServerUpgrader(
                        shouldUpgrade: { channel, head in
                            channel.eventLoop.makeSucceededFuture(
                                head.headers["Authorization"] == ["Bearer \(TLSTestServer.goodToken)"] ? HTTPHeaders() : nil)
                        },
                        upgradePipelineHandler: { channel, _ in
                            // The HTTP-only answerer goes, or it would see the WebSocket's bytes.
                            channel.pipeline.removeHandler(unauthorized).flatMap {
                                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Echo()) }
                            }
                        })
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLServerHandler(context: context))
                    try sync.configureHTTPServerPipeline(withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in }))
                    try sync.addHandler(unauthorized)
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        defer { channel.close(promise: nil) }
        guard let port = channel.localAddress?.port else { throw TestClientError.closed }
        return try await body(port, identity.pin)
    }
}
