import Logging
import NIOCore
import NIOEmbedded
import NIOSSL
import Testing
@testable import BridgeTLS

/// The bridge's TLS pipeline (``TLSSniffer`` → NIOSSL) against a real NIOSSL client, both on embedded channels with
/// the bytes carried between them by hand, so every TLS record the bridge writes can be counted.
@Suite("TLS write coalescing", .tags(.unit))
struct TLSWriteCoalescerTests {
    /// A server channel behind ``TLSSniffer`` with the bridge's identity, and a client that completed the handshake.
    struct Pair {
        let server: EmbeddedChannel
        let client: EmbeddedChannel

        /// `sniffed`: behind ``TLSSniffer`` as the bridge serves; otherwise a bare `NIOSSLServerHandler`, which is
        /// what the sniffer put in the pipeline before the coalescer.
        init(sniffed: Bool = true) throws {
            let directory = try TemporaryDirectory()
            let identity = try BridgeIdentity.loadOrCreate(
                in: directory.url, names: BridgeIdentityNames(hostName: "desk", addresses: [], tailscaleName: nil))
            let serverContext = try TLSServerContext(identity: identity).sslContext
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.certificateVerification = .none
            let clientContext = try NIOSSLContext(configuration: configuration)
            server = sniffed
                ? EmbeddedChannel(handler: TLSSniffer(sslContext: serverContext, timeout: .seconds(30), logger: Logger(label: "test")))
                : EmbeddedChannel(handler: NIOSSLServerHandler(context: serverContext))
            client = EmbeddedChannel(handler: try NIOSSLClientHandler(context: clientContext, serverHostname: nil))
            let address = try SocketAddress(ipAddress: "127.0.0.1", port: 9099)
            try server.connect(to: address).wait()
            try client.connect(to: address).wait()
            try shuttle()
        }

        /// Carries bytes both ways until neither side has anything more to send; returns the server's records.
        @discardableResult
        func shuttle() throws -> [UInt8] {
            var fromServer: [UInt8] = []
            for _ in 0..<20 {
                var moved = false
                while let bytes = try client.readOutbound(as: ByteBuffer.self) {
                    try server.writeInbound(bytes)
                    moved = true
                }
                while let bytes = try server.readOutbound(as: ByteBuffer.self) {
                    fromServer += Array(bytes.readableBytesView)
                    try client.writeInbound(bytes)
                    moved = true
                }
                if !moved { break }
            }
            return fromServer
        }

        /// Writes `buffers` on the server as the WebSocket encoder does (one write each, one flush); the number of
        /// TLS records that went out and the plaintext the client read.
        func send(_ buffers: [String]) throws -> (records: Int, received: String) {
            var promises: [EventLoopFuture<Void>] = []
            for text in buffers {
                let promise = server.eventLoop.makePromise(of: Void.self)
                server.write(ByteBuffer(string: text), promise: promise)
                promises.append(promise.futureResult)
            }
            server.flush()
            let records = TLSWriteCoalescerTests.recordCount(try shuttle())
            for future in promises { try future.wait() }
            var received = ""
            while let buffer = try client.readInbound(as: ByteBuffer.self) {
                received += String(buffer: buffer)
            }
            return (records, received)
        }
    }

    /// How many TLS records `bytes` holds (5-byte header: type, version, length).
    static func recordCount(_ bytes: [UInt8]) -> Int {
        var index = 0
        var count = 0
        while index + 5 <= bytes.count {
            index += 5 + (Int(bytes[index + 3]) << 8 | Int(bytes[index + 4]))
            count += 1
        }
        return count
    }

    @Test("The writes of one flush leave as one TLS record, in order, and every write's promise completes")
    func oneRecordPerFlush() throws {
        let pair = try Pair()
        // The first write also carries the TLS 1.3 session tickets, which BoringSSL sends with it.
        _ = try pair.send(["warm-up"])
        let frames = (0..<64).flatMap { ["\u{81}\u{7e}", "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"n\":\($0)}"] }
        let (records, received) = try pair.send(frames)
        #expect(received == frames.joined())
        // Before the coalescer: one record per write, 128 here.
        #expect(records == 1)
    }

    @Test("Without the coalescer (the pipeline before it), the same flush is one TLS record per write")
    func oneRecordPerWriteBefore() throws {
        let pair = try Pair(sniffed: false)
        _ = try pair.send(["warm-up"])
        let frames = (0..<64).flatMap { ["\u{81}\u{7e}", "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"n\":\($0)}"] }
        let (records, received) = try pair.send(frames)
        #expect(received == frames.joined())
        #expect(records == 128)
    }

    @Test("A single write passes untouched; more than 16 KiB in one flush is cut, and nothing is lost")
    func largeFlush() throws {
        let pair = try Pair()
        _ = try pair.send(["warm-up"])
        let single = try pair.send(["only one"])
        #expect(single.records == 1 && single.received == "only one")
        let chunk = String(repeating: "x", count: 4000)
        let many = (0..<10).map { "\($0)" + chunk }
        let (records, received) = try pair.send(many)
        #expect(received == many.joined())
        #expect(records >= 3 && records <= 5)
    }
}
