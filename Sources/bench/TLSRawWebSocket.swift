// wss:// for `bench relay` and `bench latency` (issue 32 goal 4). The plaintext relay clients read raw blocking
// sockets (RawWebSocket); TLS needs BoringSSL, which only NIOSSL offers here, so this client is a NIO channel:
// NIOSSLClientHandler, then a handler that does the upgrade by hand and reads frames on the event loop. Counting
// (and stamping latencies) happens right there, on the event loop, so the figure stays the server's.

import CoreFoundation
import Dispatch
import Foundation
import NIOCore
import NIOPosix
import NIOSSL

#if canImport(Glibc)
import Glibc
#endif

/// What the relay and latency clients need of a connection: ws:// on a raw socket, wss:// on a NIO channel.
protocol RelaySocket: AnyObject, Sendable {
    func sendText(_ text: String) throws
    func nextText(until deadline: UInt64) -> String?
    func count(framesStartingWith prefix: [UInt8], expected: Int, until deadline: UInt64) -> Int
    func latencies(framesStartingWith prefix: [UInt8], expected: Int, until deadline: UInt64) -> [UInt32]
    func sendClose()
}

extension RawWebSocket: RelaySocket {}

/// A relay client for `url`: ``RawWebSocket`` for ws://, ``TLSRawWebSocket`` for wss://.
func makeRelaySocket(url: String) throws -> any RelaySocket {
    url.hasPrefix("wss://") ? try TLSRawWebSocket(url: url) : try RawWebSocket(url: url)
}

/// One wss:// connection to 127.0.0.1 (no certificate check, SNI `localhost`: the bench measures TLS's cost against
/// the bridge's self-signed identity).
///
/// Frames are parsed on the event loop; until a count or latency run starts, text frames are queued for
/// ``nextText(until:)``.
final class TLSRawWebSocket: RelaySocket, @unchecked Sendable {
    private let channel: any Channel
    private let reader: FrameReader

    init(url: String) throws {
        guard let parsed = URL(string: url), let port = parsed.port, parsed.host == "127.0.0.1" else {
            throw RawWebSocket.Failure(description: "relay needs a wss://127.0.0.1:PORT/ URL, got \(url)")
        }
        let path = parsed.path.isEmpty ? "/" : parsed.path
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification = .none
        let sslContext = try NIOSSLContext(configuration: configuration)
        let reader = FrameReader()
        self.reader = reader
        let request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        channel = try ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        NIOSSLClientHandler(context: sslContext, serverHostname: "localhost"))
                    try channel.pipeline.syncOperations.addHandler(FrameHandler(reader: reader))
                }
            }
            .connect(host: "127.0.0.1", port: port).wait()
        try channel.writeAndFlush(ByteBuffer(string: request)).wait()
        guard reader.waitForUpgrade(until: now() + 10_000_000_000) else {
            channel.close(promise: nil)
            throw RawWebSocket.Failure(description: "no upgrade over TLS")
        }
    }

    deinit { channel.close(promise: nil) }

    func sendText(_ text: String) throws {
        try channel.writeAndFlush(ByteBuffer(bytes: maskedFrame(opcode: 0x1, payload: Array(text.utf8)))).wait()
    }

    func sendClose() {
        channel.writeAndFlush(ByteBuffer(bytes: maskedFrame(opcode: 0x8, payload: [])), promise: nil)
    }

    func nextText(until deadline: UInt64) -> String? { reader.nextText(until: deadline) }

    func count(framesStartingWith prefix: [UInt8], expected: Int, until deadline: UInt64) -> Int {
        reader.run(.count(prefix), expected: expected, until: deadline).count
    }

    func latencies(framesStartingWith prefix: [UInt8], expected: Int, until deadline: UInt64) -> [UInt32] {
        reader.run(.latency(prefix), expected: expected, until: deadline).samples
    }
}

/// A masked client frame.
private func maskedFrame(opcode: UInt8, payload: [UInt8]) -> [UInt8] {
    var frame: [UInt8] = [0x80 | opcode]
    if payload.count < 126 {
        frame.append(0x80 | UInt8(payload.count))
    } else {
        frame.append(0x80 | 126)
        frame.append(UInt8(payload.count >> 8))
        frame.append(UInt8(payload.count & 0xFF))
    }
    let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
    frame.append(contentsOf: mask)
    frame.append(contentsOf: payload.enumerated().map { $0.element ^ mask[$0.offset % 4] })
    return frame
}

/// The state shared by the event loop (which adds frames) and the client's thread (which waits for them).
final class FrameReader: @unchecked Sendable {
    enum Mode {
        case queue
        case count([UInt8])
        case latency([UInt8])
    }

    private let condition = NSCondition()
    private var upgraded = false
    private var closed = false
    private var mode = Mode.queue
    private var queued: [(bytes: [UInt8], received: UInt64)] = []
    private var counted = 0
    private var samples: [UInt32] = []
    private var expected = Int.max

    func waitForUpgrade(until deadline: UInt64) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while !upgraded, !closed, now() < deadline { _ = condition.wait(until: Date(timeIntervalSinceNow: 0.05)) }
        return upgraded
    }

    func markUpgraded() {
        condition.lock()
        upgraded = true
        condition.broadcast()
        condition.unlock()
    }

    func markClosed() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    /// A text frame read on the event loop.
    func text(_ payload: ByteBufferView) {
        let received = realtimeNanoseconds()
        condition.lock()
        defer { condition.unlock() }
        switch mode {
        case .queue:
            queued.append((Array(payload), received))
            condition.broadcast()
        case .count(let prefix):
            if counted < expected, payload.starts(with: prefix) { counted += 1 }
            if counted >= expected { condition.broadcast() }
        case .latency(let prefix):
            if samples.count < expected, payload.starts(with: prefix), let sample = latency(payload, received: received) {
                samples.append(sample)
            }
            if samples.count >= expected { condition.broadcast() }
        }
    }

    func nextText(until deadline: UInt64) -> String? {
        condition.lock()
        defer { condition.unlock() }
        while queued.isEmpty, !closed, now() < deadline { _ = condition.wait(until: Date(timeIntervalSinceNow: 0.05)) }
        guard !queued.isEmpty else { return nil }
        return String(decoding: queued.removeFirst().bytes, as: UTF8.self)
    }

    /// Counts (or stamps) the frames already queued, then has the event loop do it for the rest, until `expected`.
    func run(_ newMode: Mode, expected: Int, until deadline: UInt64) -> (count: Int, samples: [UInt32]) {
        condition.lock()
        defer { condition.unlock() }
        self.expected = expected
        for frame in queued {
            switch newMode {
            case .count(let prefix): if frame.bytes.starts(with: prefix) { counted += 1 }
            case .latency(let prefix):
                if frame.bytes.starts(with: prefix), let sample = latency(frame.bytes[...], received: frame.received) {
                    samples.append(sample)
                }
            case .queue: break
            }
        }
        queued = []
        mode = newMode
        func done() -> Bool {
            if case .latency = newMode { return samples.count >= expected }
            return counted >= expected
        }
        while !done(), !closed, now() < deadline { _ = condition.wait(until: Date(timeIntervalSinceNow: 0.05)) }
        return (counted, samples)
    }

    /// The time since the send time stamped in the frame (` t=<CLOCK_REALTIME ns>`), in µs.
    private func latency<Bytes: Collection>(_ payload: Bytes, received: UInt64) -> UInt32? where Bytes.Element == UInt8 {
        let marker = Array(" t=".utf8)
        let bytes = Array(payload)
        guard let at = bytes.firstRange(of: marker) else { return nil }
        var stamp: UInt64 = 0
        var index = at.upperBound
        while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
            stamp = stamp * 10 + UInt64(bytes[index] - 0x30)
            index += 1
        }
        return UInt32(min(received > stamp ? (received - stamp) / 1000 : 0, UInt64(UInt32.max)))
    }

    private func realtimeNanoseconds() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }
}

/// Reads the upgrade's answer, then server frames (unmasked), on the event loop.
private final class FrameHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let reader: FrameReader
    private var buffer = ByteBuffer()
    private var upgraded = false

    init(reader: FrameReader) { self.reader = reader }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var incoming = unwrapInboundIn(data)
        buffer.writeBuffer(&incoming)
        if !upgraded {
            let view = buffer.readableBytesView
            guard let end = view.firstRange(of: Array("\r\n\r\n".utf8)) else { return }
            let head = String(decoding: view[view.startIndex..<end.upperBound], as: UTF8.self)
            guard head.hasPrefix("HTTP/1.1 101") else {
                context.close(promise: nil)
                return
            }
            buffer.moveReaderIndex(to: end.upperBound)
            upgraded = true
            reader.markUpgraded()
        }
        while let (opcode, payload) = nextFrame() {
            if opcode == 0x1 { reader.text(payload) }
            if opcode == 0x8 {
                context.close(promise: nil)
                return
            }
        }
        buffer.discardReadBytes()
    }

    func channelInactive(context: ChannelHandlerContext) {
        reader.markClosed()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    /// The next complete frame's opcode and payload, consumed from the buffer.
    private func nextFrame() -> (UInt8, ByteBufferView)? {
        let start = buffer.readerIndex
        guard let first = buffer.getInteger(at: start, as: UInt8.self),
              let second = buffer.getInteger(at: start + 1, as: UInt8.self) else { return nil }
        var length = Int(second & 0x7F)
        var header = 2
        if length == 126 {
            guard let value = buffer.getInteger(at: start + 2, as: UInt16.self) else { return nil }
            length = Int(value)
            header = 4
        } else if length == 127 {
            guard let value = buffer.getInteger(at: start + 2, as: UInt64.self) else { return nil }
            length = Int(value)
            header = 10
        }
        guard buffer.readableBytes >= header + length,
              let payload = buffer.viewBytes(at: start + header, length: length) else { return nil }
        buffer.moveReaderIndex(forwardBy: header + length)
        return (first & 0x0F, payload)
    }
}
