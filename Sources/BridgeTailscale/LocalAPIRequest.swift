import Foundation
import NIOCore
import NIOPosix

/// A minimal HTTP/1.0 GET over a unix socket, enough for tailscaled's LocalAPI, on a SwiftNIO channel.
enum LocalAPIRequest {
    /// The largest answer read.
    static let maxResponse = 8 << 20

    /// GETs `path` from the LocalAPI at `socketPath`; the whole exchange takes at most `timeout`.
    static func get(path: String, socket socketPath: String, timeout: Duration) async throws(TailscaleError) -> Data {
        let response: ByteBuffer
        do {
            response = try await TailscaleDeadline.run(within: timeout, "the LocalAPI at \(socketPath)") {
                try await exchange(path: path, socketPath: socketPath, timeout: timeout)
            }
        } catch let error as TailscaleError {
            throw error
        } catch {
            throw .unreachable("\(socketPath): \(error)")
        }
        let bytes = Data(response.readableBytesView)
        guard let split = bytes.range(of: Data("\r\n\r\n".utf8)) else {
            throw .badAnswer("no HTTP header end in \(bytes.count) bytes")
        }
        let head = String(decoding: bytes[..<split.lowerBound], as: UTF8.self)
        let status = head.split(separator: " ", maxSplits: 2).dropFirst().first.map(String.init) ?? "?"
        guard status == "200" else {
            throw .badAnswer("HTTP status \(status) for \(path)")
        }
        return Data(bytes[split.upperBound...])
    }

    private static func exchange(path: String, socketPath: String, timeout: Duration) async throws -> ByteBuffer {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(TimeAmount(timeout))
            .connect(unixDomainSocketPath: socketPath) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            let request = "GET \(path) HTTP/1.0\r\nHost: local-tailscaled.sock\r\nConnection: close\r\n\r\n"
            try await outbound.write(ByteBuffer(string: request))
            var response = ByteBuffer()
            for try await chunk in inbound {
                var chunk = chunk
                response.writeBuffer(&chunk)
                if response.readableBytes > maxResponse { break }
            }
            return response
        }
    }
}
