import BridgeRPC
import BridgeServer
import BridgeTestKit
import Foundation
import HTTPTypes
import HummingbirdWSClient
import Logging
import NIOWebSocket
import Synchronization
import Testing

@Suite("Keepalive and the upgrade authorizer", .timeLimit(.minutes(1)), .tags(.loopback))
struct KeepaliveAndAuthTests {
    @Test("a peer that never answers pings is closed after the keepalive timeout; one that does stays")
    func deadPeer() async throws {
        // 1 s: short enough to see several periods, long enough that a loaded CI machine still answers in time
        // (at 200 ms, and once at 500 ms, the live client below was closed while the whole suite ran on 2 cores).
        try await TestBridge.with(configure: { $0.pingInterval = .seconds(1) }, { port, _ in
            let started = ContinuousClock.now
            // A live peer, beside the dead one: it answers every ping, and once its third ping came (two pongs were
            // seen and accepted by the next period's check) it is still answered. It waits for the pings themselves,
            // not for a time in which they should have come.
            async let live = onOwnThread { () throws -> (pings: Int, answered: Bool) in
                let socket = try RawWebSocket(port: port)
                try socket.sendText(HandshakeTests.seedInitialize)
                var pings = 0
                while let frame = try socket.nextFrame() {
                    switch frame.opcode {
                    case 0x1 where (try? JSONValue(parsingUTF8: frame.payload))?["id"] == "still":
                        return (pings, true)
                    case 0x9:
                        try socket.sendPong(frame.payload)
                        pings += 1
                        if pings == 3 { try socket.sendText(#"{"jsonrpc":"2.0","id":"still","method":"initialize","params":{"protocolVersion":1}}"#) }
                    case 0x8:
                        return (pings, false)
                    default:
                        break
                    }
                }
                return (pings, false)
            }
            // The peer answers pings until it has its initialize answer, then goes deaf: the answer cannot race the
            // keepalive (on a loaded machine it once took longer than two ping periods, and the test failed), and
            // the deaf part still has to be seen as dead, pinged and closed.
            let (sawAnswer, sawPing, sawClose) = try await onOwnThread { () throws -> (Bool, Bool, Bool) in
                let dead = try RawWebSocket(port: port)
                try dead.sendText(HandshakeTests.seedInitialize)
                var sawAnswer = false
                var sawPing = false
                var sawClose = false
                while let frame = try dead.nextFrame() {
                    switch frame.opcode {
                    case 0x1: sawAnswer = sawAnswer || String(decoding: frame.payload, as: UTF8.self).contains("protocol_version")
                    case 0x9 where !sawAnswer: try dead.sendPong(frame.payload)
                    case 0x9: sawPing = true
                    case 0x8: sawClose = true
                    default: break
                    }
                }
                return (sawAnswer, sawPing, sawClose)
            }
            #expect(sawAnswer)
            #expect(sawPing)
            #expect(sawClose)
            let (pings, answered) = try await live
            #expect(pings >= 3 && answered, "the live peer was closed after \(pings) pings")
            #expect(ContinuousClock.now - started < .seconds(15))
        })
    }

    @Test("the upgrade authorizer sees headers and the peer address, and can refuse the WebSocket")
    func authorizer() async throws {
        let seen = Mutex<[String]>([])
        try await TestBridge.with(configure: { configuration in
            configuration.authorizeUpgrade = { request in
                seen.withLock { $0.append(request.remoteAddress ?? "none") }
                return request.headers[.authorization] == "Bearer good"
                    ? .allow : .deny(status: .unauthorized, code: "token_missing", message: "send a token")
            }
        }, { port, _ in
            // Refused: the connection never becomes a WebSocket.
            let refused: Bool
            do {
                _ = try await WebSocketClient.connect(url: "ws://127.0.0.1:\(port)/", logger: Logger(label: "test")) { _, _, _ in }
                refused = false
            } catch {
                refused = true
            }
            #expect(refused)
            // Allowed with the header.
            var configuration = WebSocketClientConfiguration()
            configuration.additionalHeaders[.authorization] = "Bearer good"
            let frozen = configuration
            let answer = Mutex<String?>(nil)
            try await WebSocketClient.connect(url: "ws://127.0.0.1:\(port)/", configuration: frozen, logger: Logger(label: "test")) { inbound, outbound, _ in
                try await outbound.write(.text(HandshakeTests.seedInitialize))
                for try await message in inbound.messages(maxSize: 1 << 20) {
                    if case .text(let text) = message {
                        answer.withLock { $0 = text }
                        break
                    }
                }
                try await outbound.close(.normalClosure, reason: nil)
            }
            #expect(answer.withLock { $0 }?.contains(#""protocol_version":"0.2.2""#) == true)
            #expect(seen.withLock { $0 } == ["127.0.0.1", "127.0.0.1"])
        })
    }
}
