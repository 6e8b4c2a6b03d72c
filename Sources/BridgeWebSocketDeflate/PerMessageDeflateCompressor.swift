import CompressNIO
public import NIOCore

/// Compresses the messages one end of a connection sends (RFC 7692 §7.2.1), on the connection's event loop.
///
/// The zlib stream is made on the first message worth compressing and kept for the context takeover; ``release()``
/// frees it (a connection that has been quiet a while: the next message starts a new stream with an empty window,
/// which the peer's inflater reads like any other, so releasing costs only the next message's ratio).
/// Not thread-safe: one connection's event loop owns it.
public final class PerMessageDeflateCompressor {
    /// The window (bits) and whether every message starts afresh.
    public let windowBits: Int
    /// Whether the stream is reset after each message (the peer asked for `*_no_context_takeover`).
    public let noContextTakeover: Bool
    private let settings: PerMessageDeflateSettings
    private var stream: ZlibCompressor?

    /// A compressor with a window of at most `windowBits` (9...15) and `settings`' memory and level.
    public init(windowBits: Int, noContextTakeover: Bool, settings: PerMessageDeflateSettings) {
        self.windowBits = min(max(windowBits, 9), min(settings.maxWindowBits, 15))
        self.noContextTakeover = noContextTakeover
        self.settings = settings
    }

    /// Whether zlib's stream is allocated now.
    public var isAllocated: Bool { stream != nil }

    /// Whether a message of `size` bytes is worth compressing.
    public func shouldCompress(size: Int) -> Bool {
        size >= settings.minimumSize
    }

    /// The payload of `message` compressed as one whole message (its sync-flush tail `00 00 ff ff` removed), to be sent
    /// with RSV1 set.
    /// - Throws: ``PerMessageDeflateError/zlibFailure(_:)``; the stream is then released, so the message may still be
    ///   sent uncompressed (the next compressed one starts afresh, with nothing the peer lacks).
    public func compress(_ message: ByteBuffer, allocator: ByteBufferAllocator) throws(PerMessageDeflateError) -> ByteBuffer {
        do {
            let stream = try self.stream ?? makeStream()
            self.stream = stream
            var input = message
            var output = allocator.buffer(capacity: stream.maxSize(from: input))
            // zlib completes a sync flush only when it had room left: grow and go on until it did (bounded: the output
            // needs at most deflateBound + 5 bytes, and each round adds at least as much).
            for _ in 0..<16 {
                do {
                    try stream.deflate(from: &input, to: &output, flush: .sync)
                    if input.readableBytes == 0 && output.writableBytes > 0 { break }
                } catch let error as CompressNIOError where error == .bufferOverflow {
                    // no room left: grow below
                }
                output.reserveCapacity(minimumWritableBytes: max(output.readableBytes, 256))
            }
            guard input.readableBytes == 0, output.readableBytes >= 4,
                  output.getBytes(at: output.writerIndex - 4, length: 4) == [0, 0, 0xFF, 0xFF]
            else {
                throw PerMessageDeflateError.zlibFailure("the sync flush did not complete")
            }
            output.moveWriterIndex(to: output.writerIndex - 4)
            if noContextTakeover { try stream.reset() }
            return output
        } catch {
            stream = nil
            if let error = error as? PerMessageDeflateError { throw error }
            throw .zlibFailure("\(error)")
        }
    }

    /// Frees zlib's stream (the next message starts a new one).
    public func release() {
        stream = nil
    }

    private func makeStream() throws -> ZlibCompressor {
        try ZlibCompressor(algorithm: .deflate, configuration: ZlibConfiguration(
            windowSize: Int32(windowBits), compressionLevel: Int32(settings.compressionLevel),
            memoryLevel: Int32(settings.memoryLevel)))
    }
}
