import CompressNIO
public import NIOCore

/// Inflates the compressed messages one end of a connection receives (RFC 7692 §7.2.2), fragment by fragment, never
/// past a size limit: a message that would inflate beyond it stops with ``PerMessageDeflateError/messageTooLarge(limit:)``
/// having produced at most the limit (a zip bomb costs the limit, not its inflated size).
///
/// With `noContextTakeover` (what the bridge asks of its clients) zlib's stream lives only while a message is being
/// inflated; otherwise it is kept between messages, as the peer's compressor expects.
/// Not thread-safe: one connection's event loop owns it.
public final class PerMessageDeflateInflater {
    /// Whether each message is inflated by a stream of its own.
    public let noContextTakeover: Bool
    private var stream: ZlibDecompressor?
    /// Output room added per step: enough for typical messages at once, small enough that a bomb is caught early.
    private static let step = 16 * 1024

    /// An inflater; with `noContextTakeover` each message gets a stream of its own.
    public init(noContextTakeover: Bool) {
        self.noContextTakeover = noContextTakeover
    }

    /// Whether zlib's stream is allocated now.
    public var isAllocated: Bool { stream != nil }

    /// Inflates one fragment of a compressed message; at the message's last fragment (`isFinal`) the sync-flush tail
    /// the sender removed is put back.
    ///
    /// Returns the fragment's inflated bytes, at most `limit` of them.
    /// - Throws: ``PerMessageDeflateError/messageTooLarge(limit:)`` past `limit`,
    ///   ``PerMessageDeflateError/invalidCompressedData`` for data that is not deflate, and
    ///   ``PerMessageDeflateError/zlibFailure(_:)``. After a throw the stream is released: the connection must end.
    public func inflate(_ fragment: ByteBuffer, isFinal: Bool, limit: Int, allocator: ByteBufferAllocator) throws(PerMessageDeflateError) -> ByteBuffer {
        do {
            let output = try inflateOrThrow(fragment, isFinal: isFinal, limit: limit, allocator: allocator)
            if isFinal && noContextTakeover { stream = nil }
            return output
        } catch {
            stream = nil
            if let error = error as? PerMessageDeflateError { throw error }
            if let error = error as? CompressNIOError, error == .corruptData { throw .invalidCompressedData }
            throw .zlibFailure("\(error)")
        }
    }

    /// Frees zlib's stream; only between messages, and only when the peer does not take context over.
    public func release() {
        if noContextTakeover { stream = nil }
    }

    private func inflateOrThrow(_ fragment: ByteBuffer, isFinal: Bool, limit: Int, allocator: ByteBufferAllocator) throws -> ByteBuffer {
        let stream = try self.stream ?? ZlibDecompressor(algorithm: .deflate, windowSize: 15)  // reads any smaller window too
        self.stream = stream
        var input = fragment
        if isFinal {
            input.writeBytes([0, 0, 0xFF, 0xFF])
        }
        var output = allocator.buffer(capacity: min(max(input.readableBytes * 4, 256), limit + 1, Self.step))
        while input.readableBytes > 0 {
            if output.writableBytes == 0 {
                guard output.readableBytes <= limit else { throw PerMessageDeflateError.messageTooLarge(limit: limit) }
                output.reserveCapacity(minimumWritableBytes: min(max(output.readableBytes, Self.step), limit + 1 - output.readableBytes))
            }
            let before = (input.readableBytes, output.readableBytes)
            do {
                try stream.inflate(from: &input, to: &output)
            } catch let error as CompressNIOError where error == .bufferOverflow || error == .inputBufferOverflow {
                // output full (grown above), or all input taken
            }
            if output.readableBytes > limit { throw PerMessageDeflateError.messageTooLarge(limit: limit) }
            // The stream ended (a final deflate block) and takes no more, or zlib made no progress: what is left is not
            // part of this stream.
            if before == (input.readableBytes, output.readableBytes) && output.writableBytes > 0 { break }
        }
        return output
    }
}
