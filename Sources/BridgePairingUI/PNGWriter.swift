import CPNG
import Foundation

/// Writes QR codes as 8-bit grayscale PNG images with libpng.
///
/// Error handling and `longjmp`: libpng reports errors by calling the error function and then `longjmp`ing to a
/// `setjmp` point, which Swift cannot create (and a `longjmp` across Swift frames is undefined behaviour). So this
/// writer installs its own error function that records the message and prints it to standard error, installs no
/// jump buffer, and validates every input beforehand so libpng has nothing to reject: dimensions are capped at
/// ``maximumDimension`` pixels (far below libpng's limits), the format is fixed (8-bit gray, no interlace, default
/// filters and compression), and the write callback only appends to memory and cannot fail. The only error left is
/// libpng running out of memory; then, with no jump buffer set, libpng calls `abort()` after our error function
/// returns, so the process stops rather than unwinding through Swift frames. No `longjmp` ever crosses Swift code.
public enum PNGWriter {
    /// The largest width or height, in pixels, this writer accepts.
    public static let maximumDimension = 8192

    /// Encodes an 8-bit grayscale image (`pixels` row-major, one byte per pixel, 0 = black, 255 = white).
    public static func grayscale(width: Int, height: Int, pixels: [UInt8]) throws(QRCodeError) -> [UInt8] {
        guard width > 0, height > 0, width <= maximumDimension, height <= maximumDimension else {
            throw .invalidImageParameters("image must be 1...\(maximumDimension) pixels per side, not \(width)x\(height)")
        }
        guard pixels.count == width * height else {
            throw .invalidImageParameters("expected \(width * height) pixels, got \(pixels.count)")
        }
        let sink = Sink()
        let context = Unmanaged.passRetained(sink)
        defer { context.release() }
        let pointer = context.toOpaque()

        guard let png = png_create_write_struct(PNG_LIBPNG_VER_STRING, pointer, pngError, pngWarning) else {
            throw .pngFailed("png_create_write_struct failed (libpng version mismatch or out of memory)")
        }
        var info = png_create_info_struct(png)
        defer {
            var pngOptional: png_structp? = png
            png_destroy_write_struct(&pngOptional, &info)
        }
        guard info != nil else { throw .pngFailed("png_create_info_struct failed (out of memory)") }

        png_set_write_fn(png, pointer, pngWrite, pngFlush)
        png_set_IHDR(
            png, info, png_uint_32(width), png_uint_32(height), 8, PNG_COLOR_TYPE_GRAY,
            PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT)
        png_write_info(png, info)
        pixels.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            for row in 0..<height {
                png_write_row(png, base + row * width)
            }
        }
        png_write_end(png, nil)
        if let error = sink.error { throw .pngFailed(error) }
        return sink.bytes
    }

    /// Collects the encoded bytes and any message libpng reports.
    private final class Sink {
        var bytes: [UInt8] = []
        var error: String?
        var warnings: [String] = []
    }

    private static let pngWrite: png_rw_ptr = { png, data, length in
        guard let png, let data, let raw = png_get_io_ptr(png) else { return }
        let sink = Unmanaged<Sink>.fromOpaque(raw).takeUnretainedValue()
        sink.bytes.append(contentsOf: UnsafeBufferPointer(start: data, count: length))
    }

    private static let pngFlush: png_flush_ptr = { _ in }

    private static let pngError: png_error_ptr = { png, message in
        let text = message.map { String(cString: $0) } ?? "unknown error"
        if let png, let raw = png_get_error_ptr(png) {
            Unmanaged<Sink>.fromOpaque(raw).takeUnretainedValue().error = text
        }
        // libpng calls abort() when this returns (no jump buffer is installed): say why first.
        FileHandle.standardError.write(Data("oa-bridge: libpng error while writing the QR image: \(text)\n".utf8))
    }

    private static let pngWarning: png_error_ptr = { png, message in
        guard let png, let raw = png_get_error_ptr(png) else { return }
        Unmanaged<Sink>.fromOpaque(raw).takeUnretainedValue().warnings.append(message.map { String(cString: $0) } ?? "")
    }
}

extension QRCode {
    /// The largest scale factor ``pngData(scale:quietZone:)`` accepts.
    public static let maximumScale = 64

    /// The code as an 8-bit grayscale PNG: `scale` pixels per module, `quietZone` light modules of border (default 4,
    /// the standard), black modules on white.
    public func pngData(scale: Int = 8, quietZone: Int = 4) throws(QRCodeError) -> [UInt8] {
        guard (1...Self.maximumScale).contains(scale) else {
            throw .invalidImageParameters("scale must be 1...\(Self.maximumScale), not \(scale)")
        }
        guard (0...64).contains(quietZone) else {
            throw .invalidImageParameters("quiet zone must be 0...64 modules, not \(quietZone)")
        }
        let side = (size + 2 * quietZone) * scale
        guard side <= PNGWriter.maximumDimension else {
            throw .invalidImageParameters("a \(side)-pixel image is too large; use a smaller scale")
        }
        var pixels = [UInt8](repeating: 255, count: side * side)
        for y in 0..<size {
            for x in 0..<size where isDark(x: x, y: y) {
                let left = (x + quietZone) * scale
                let top = (y + quietZone) * scale
                for row in top..<(top + scale) {
                    let start = row * side + left
                    pixels.replaceSubrange(start..<(start + scale), with: repeatElement(0, count: scale))
                }
            }
        }
        return try PNGWriter.grayscale(width: side, height: side, pixels: pixels)
    }
}
