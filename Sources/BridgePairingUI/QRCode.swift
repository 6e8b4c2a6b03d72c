import CQREncode
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a QR code or its image could not be made.
///
/// Messages never contain the encoded text.
public enum QRCodeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Nothing to encode.
    case emptyInput
    /// The text does not fit in the largest QR code (version 40) at error-correction level M.
    case inputTooLarge(byteCount: Int)
    /// libqrencode failed with this errno.
    case encoderFailed(errno: Int32)
    /// An image parameter is out of range (scale, quiet zone or resulting size).
    case invalidImageParameters(String)
    /// libpng reported an error.
    case pngFailed(String)

    /// A sentence a user can act on.
    public var description: String {
        switch self {
        case .emptyInput:
            "There is nothing to put in the QR code."
        case .inputTooLarge(let count):
            "The pairing payload (\(count) bytes) is too large for a QR code; use a shorter service name or fewer fallback addresses."
        case .encoderFailed(let code):
            "libqrencode could not encode the payload (\(String(cString: strerror(code))))."
        case .invalidImageParameters(let detail):
            "The QR image parameters are out of range: \(detail)."
        case .pngFailed(let detail):
            "libpng could not write the QR image: \(detail)."
        }
    }
}

/// A QR code symbol as a square matrix of modules, encoded by libqrencode in 8-bit (byte) mode.
public struct QRCode: Sendable, Equatable {
    /// Error-correction levels.
    public enum ErrorCorrection: Sendable {
        /// About 7 % of the symbol may be damaged.
        case low
        /// About 15 %: the default, a good balance for screens.
        case medium
        /// About 25 %.
        case quartile
        /// About 30 %.
        case high

        var level: QRecLevel {
            switch self {
            case .low: QR_ECLEVEL_L
            case .medium: QR_ECLEVEL_M
            case .quartile: QR_ECLEVEL_Q
            case .high: QR_ECLEVEL_H
            }
        }
    }

    /// Number of modules per side (21 for version 1, +4 per version), without quiet zone.
    public let size: Int
    /// The QR version libqrencode chose (1...40).
    public let version: Int
    /// Row-major modules, `true` for a dark module; `size * size` entries.
    public let modules: [Bool]

    /// Encodes `text` (as UTF-8 bytes) at the smallest version that fits.
    public init(text: String, errorCorrection: ErrorCorrection = .medium) throws(QRCodeError) {
        try self.init(data: Array(text.utf8), errorCorrection: errorCorrection)
    }

    /// Encodes raw bytes at the smallest version that fits.
    public init(data: [UInt8], errorCorrection: ErrorCorrection = .medium) throws(QRCodeError) {
        guard !data.isEmpty else { throw .emptyInput }
        guard data.count < Int(Int32.max) else { throw .inputTooLarge(byteCount: data.count) }
        errno = 0
        let encoded = data.withUnsafeBufferPointer { buffer in
            QRcode_encodeData(Int32(buffer.count), buffer.baseAddress, 0, errorCorrection.level)
        }
        guard let encoded else {
            let code = errno
            if code == ERANGE { throw .inputTooLarge(byteCount: data.count) }
            throw .encoderFailed(errno: code == 0 ? EINVAL : code)
        }
        defer { QRcode_free(encoded) }
        let width = Int(encoded.pointee.width)
        guard width > 0, let bytes = encoded.pointee.data else { throw .encoderFailed(errno: EINVAL) }
        // Bit 0 of each byte is the module colour (1 = dark); the other bits describe the module's role.
        let count = width * width
        modules = (0..<count).map { bytes[$0] & 1 == 1 }
        size = width
        version = Int(encoded.pointee.version)
    }

    /// Encodes `text` as small as it goes: libqrencode splits it into numeric, alphanumeric and byte segments (so a
    /// run of digits costs 3.33 bits a digit, not 8), at the smallest version any error-correction level allows; then
    /// the highest level that still fits that version is used: a smaller code on screen beats a stronger one that
    /// wraps, and a screen is not a dirty label.
    ///
    /// Text with a NUL byte is encoded in byte mode at level L.
    public init(compact text: String) throws(QRCodeError) {
        guard !text.isEmpty else { throw .emptyInput }
        guard !text.utf8.contains(0) else {
            try self.init(text: text, errorCorrection: .low)
            return
        }
        var smallest: (version: Int32, level: ErrorCorrection)?
        for level in [ErrorCorrection.low, .medium, .quartile, .high] {
            errno = 0
            guard let code = QRcode_encodeString(text, 0, level.level, QR_MODE_8, 1) else {
                if smallest == nil {
                    let failure = errno
                    if failure == ERANGE { throw .inputTooLarge(byteCount: text.utf8.count) }
                    throw .encoderFailed(errno: failure == 0 ? EINVAL : failure)
                }
                break
            }
            let version = code.pointee.version
            QRcode_free(code)
            if let best = smallest, version > best.version { break }
            smallest = (version, level)
        }
        guard let smallest else { throw .encoderFailed(errno: EINVAL) }
        errno = 0
        guard let encoded = QRcode_encodeString(text, smallest.version, smallest.level.level, QR_MODE_8, 1) else {
            throw .encoderFailed(errno: errno == 0 ? EINVAL : errno)
        }
        defer { QRcode_free(encoded) }
        let width = Int(encoded.pointee.width)
        guard width > 0, let bytes = encoded.pointee.data else { throw .encoderFailed(errno: EINVAL) }
        guard let made = QRCode(size: width, modules: (0..<(width * width)).map { bytes[$0] & 1 == 1 }) else {
            throw .encoderFailed(errno: EINVAL)
        }
        self = made
    }

    /// A code from an explicit matrix (for tests and custom encoders); `modules.count` must equal `size * size`.
    public init?(size: Int, modules: [Bool]) {
        guard size > 0, modules.count == size * size else { return nil }
        self.size = size
        self.version = (size - 17) / 4
        self.modules = modules
    }

    /// Whether the module at column `x`, row `y` is dark; positions outside the symbol (the quiet zone) are light.
    public func isDark(x: Int, y: Int) -> Bool {
        guard x >= 0, y >= 0, x < size, y < size else { return false }
        return modules[y * size + x]
    }

    // MARK: - Terminal

    /// The code drawn with Unicode half blocks, two module rows per text line, one module per column.
    ///
    /// Dark modules are drawn as the background and light modules as the foreground (`█`, `▀`, `▄`, space). With
    /// `ansiColors` (default) every line sets bright-white on black explicitly and resets at its end, so the code
    /// reads the same in light and dark terminals; without colours it assumes light text on a dark background.
    /// - Parameters:
    ///   - quietZone: light border in modules; at least 2 (clamped), 4 is the standard.
    ///   - ansiColors: whether each line sets bright-white on black and resets at its end.
    /// - Returns: the code's lines, each ending in a newline.
    public func terminalString(quietZone: Int = 2, ansiColors: Bool = true) -> String {
        terminalLines(quietZone: quietZone, ansiColors: ansiColors).joined(separator: "\n") + "\n"
    }

    /// The lines of ``terminalString(quietZone:ansiColors:)``, without line ends: `(size + 2 × quietZone)` columns
    /// each, half as many lines (rounded up).
    public func terminalLines(quietZone: Int = 2, ansiColors: Bool = true) -> [String] {
        let quiet = max(2, quietZone)
        let low = -quiet
        let high = size + quiet
        var lines: [String] = []
        var y = low
        while y < high {
            var line = ansiColors ? "\u{1B}[97;40m" : ""
            for x in low..<high {
                let topLight = !isDark(x: x, y: y)
                let bottomLight = y + 1 < high ? !isDark(x: x, y: y + 1) : true
                switch (topLight, bottomLight) {
                case (true, true): line += "█"
                case (true, false): line += "▀"
                case (false, true): line += "▄"
                case (false, false): line += " "
                }
            }
            if ansiColors { line += "\u{1B}[0m" }
            lines.append(line)
            y += 2
        }
        return lines
    }

    // MARK: - SVG and data URIs

    /// A standalone SVG (black modules on a white square, `quietZone` modules of border), scalable with CSS.
    public func svgString(quietZone: Int = 4, pixelsPerModule: Int = 8) -> String {
        let quiet = max(0, quietZone)
        let total = size + 2 * quiet
        var path = ""
        for y in 0..<size {
            for x in 0..<size where isDark(x: x, y: y) {
                path += "M\(x + quiet) \(y + quiet)h1v1h-1z"
            }
        }
        let pixels = total * max(1, pixelsPerModule)
        return """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(pixels)" height="\(pixels)" viewBox="0 0 \(total) \(total)" \
            shape-rendering="crispEdges" role="img" aria-label="Pairing QR code">\
            <rect width="\(total)" height="\(total)" fill="#ffffff"/><path fill="#000000" d="\(path)"/></svg>
            """
    }

    /// `data:image/svg+xml;base64,…` of ``svgString(quietZone:pixelsPerModule:)``, for an `<img src>`.
    public func svgDataURI(quietZone: Int = 4, pixelsPerModule: Int = 8) -> String {
        "data:image/svg+xml;base64," + Data(svgString(quietZone: quietZone, pixelsPerModule: pixelsPerModule).utf8).base64EncodedString()
    }

    /// `data:image/png;base64,…` of ``pngData(scale:quietZone:)``, for an `<img src>`.
    public func pngDataURI(scale: Int = 8, quietZone: Int = 4) throws(QRCodeError) -> String {
        "data:image/png;base64," + Data(try pngData(scale: scale, quietZone: quietZone)).base64EncodedString()
    }
}
