import BridgePairing
import BridgePairingUI
import CPNG
import Foundation
import Testing

@Suite("QR codes", .tags(.externalTool))
struct QRCodeTests {
    static let payload = PairingPayload(
        host: "192.168.1.20", session: "4f7c3a1e-2b9d-4c8e-9f1a-6d5e4c3b2a10", name: "studio-desktop",
        token: "oa_p_" + String(repeating: "A", count: 20) + String(repeating: "z", count: 23),
        fallbacks: ["studio.tail1234.ts.net"])

    @Test("libqrencode gives a square symbol with the three finder patterns")
    func matrixShape() throws {
        let code = try QRCode(text: Self.payload.jsonString())
        #expect(code.size == 17 + 4 * code.version)
        #expect(code.modules.count == code.size * code.size)
        // A finder pattern: 7x7 dark ring, light ring, 3x3 dark centre, at three corners.
        for (originX, originY) in [(0, 0), (code.size - 7, 0), (0, code.size - 7)] {
            for y in 0..<7 {
                for x in 0..<7 {
                    let ring = x == 0 || y == 0 || x == 6 || y == 6
                    let centre = (2...4).contains(x) && (2...4).contains(y)
                    #expect(code.isDark(x: originX + x, y: originY + y) == (ring || centre))
                }
            }
        }
        #expect(!code.isDark(x: -1, y: 0) && !code.isDark(x: code.size, y: 0))
        // Bigger input, bigger symbol; too big is a clear error.
        #expect(try QRCode(text: "hi").size == 21)
        #expect(throws: QRCodeError.emptyInput) { try QRCode(text: "") }
        #expect(throws: QRCodeError.inputTooLarge(byteCount: 4000)) { try QRCode(text: String(repeating: "x", count: 4000)) }
    }

    @Test("the terminal rendering maps back to exactly the module matrix plus a light quiet zone", arguments: [true, false])
    func terminalRoundTrip(ansiColors: Bool) throws {
        let code = try Self.payload.qrCode()
        let quiet = 2
        let text = code.terminalString(quietZone: quiet, ansiColors: ansiColors)
        let recovered = try #require(Self.parseTerminal(text, ansi: ansiColors))
        let side = code.size + 2 * quiet
        #expect(recovered.first?.count == side)
        for y in 0..<side {
            for x in 0..<side {
                #expect(recovered[y][x] == code.isDark(x: x - quiet, y: y - quiet), "module \(x),\(y)")
            }
        }
        // Two module rows per line; the padding row under an odd last row is light.
        #expect(recovered.count == side + side % 2)
        if side % 2 == 1 { #expect(recovered.last?.allSatisfy { !$0 } == true) }
        if ansiColors {
            for line in text.split(separator: "\n") {
                #expect(line.hasPrefix("\u{1B}[97;40m") && line.hasSuffix("\u{1B}[0m"))
            }
        }
    }

    @Test("PNG: signature, IHDR (8-bit grayscale, right size), and pixels that decode back to the matrix")
    func pngStructureAndPixels() throws {
        let code = try Self.payload.qrCode()
        let scale = 6
        let quiet = 4
        let png = try code.pngData(scale: scale, quietZone: quiet)
        let side = (code.size + 2 * quiet) * scale

        #expect(Array(png.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        #expect(Array(png[8..<16]) == [0, 0, 0, 13] + Array("IHDR".utf8))
        func bigEndian(_ offset: Int) -> Int { png[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) } }
        #expect(bigEndian(16) == side)
        #expect(bigEndian(20) == side)
        #expect(png[24] == 8)  // bit depth
        #expect(png[25] == 0)  // colour type: grayscale
        #expect(Array(png.suffix(8)) == Array("IEND".utf8) + [0xAE, 0x42, 0x60, 0x82])

        let pixels = try #require(Self.decodeGrayPNG(png, side: side))
        for y in 0..<(code.size + 2 * quiet) {
            for x in 0..<(code.size + 2 * quiet) {
                let dark = code.isDark(x: x - quiet, y: y - quiet)
                // Every pixel of the module's square has the module's colour.
                for (dx, dy) in [(0, 0), (scale - 1, 0), (0, scale - 1), (scale - 1, scale - 1)] {
                    #expect(pixels[(y * scale + dy) * side + x * scale + dx] == (dark ? 0 : 255))
                }
            }
        }
    }

    @Test("PNG parameters out of range are refused before libpng sees them")
    func pngValidation() throws {
        let code = try QRCode(text: "hello")
        #expect(throws: QRCodeError.self) { try code.pngData(scale: 0) }
        #expect(throws: QRCodeError.self) { try code.pngData(scale: 65) }
        #expect(throws: QRCodeError.self) { try code.pngData(quietZone: -1) }
        #expect(throws: QRCodeError.self) { try PNGWriter.grayscale(width: 9000, height: 1, pixels: []) }
        #expect(throws: QRCodeError.self) { try PNGWriter.grayscale(width: 2, height: 2, pixels: [0, 0, 0]) }
        let smallest = try code.pngData(scale: 1, quietZone: 0)
        #expect(Array(smallest.prefix(4)) == [0x89, 0x50, 0x4E, 0x47])
    }

    @Test("SVG and data URIs for the pairing page")
    func svgAndDataURIs() throws {
        let code = try QRCode(text: "hello")
        let svg = code.svgString()
        #expect(svg.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\""))
        #expect(svg.contains("viewBox=\"0 0 \(code.size + 8) \(code.size + 8)\""))
        let darkCount = code.modules.filter { $0 }.count
        #expect(svg.components(separatedBy: "h1v1h-1z").count - 1 == darkCount)
        let svgURI = code.svgDataURI()
        #expect(svgURI.hasPrefix("data:image/svg+xml;base64,"))
        let decodedSVG = Data(base64Encoded: String(svgURI.dropFirst("data:image/svg+xml;base64,".count)))
        #expect(decodedSVG.map { String(decoding: $0, as: UTF8.self) } == svg)
        let pngURI = try code.pngDataURI()
        let decodedPNG = Data(base64Encoded: String(pngURI.dropFirst("data:image/png;base64,".count)))
        #expect(decodedPNG.map(Array.init) == (try code.pngData()))
    }

    @Test(
        "a real QR decoder (zxing-cpp) reads the PNG and the terminal rendering back to exactly the payload",
        .enabled(if: ZXingDecoder.shared != nil, ZXingDecoder.unavailableReason))
    func realDecoder() throws {
        let decoder = try #require(ZXingDecoder.shared)
        // The QR code holds the web app URL, the payload in its fragment.
        let json = Self.payload.appURL
        #expect(json.hasPrefix("http://192.168.1.20:9099/app#"))
        let code = try Self.payload.qrCode()
        #expect(try decoder.decode(png: code.pngData()) == json)
        #expect(try decoder.decode(png: code.pngData(scale: 3, quietZone: 4)) == json)

        // What the terminal shows, rasterised: light glyph halves white, dark halves black.
        let recovered = try #require(Self.parseTerminal(code.terminalString(), ansi: true))
        let side = recovered[0].count
        guard let fromTerminal = QRCode(size: side, modules: recovered.prefix(side).flatMap { $0 }) else {
            Issue.record("terminal rendering is not square")
            return
        }
        #expect(try decoder.decode(png: fromTerminal.pngData(scale: 4, quietZone: 2)) == json)

        // Without auth or TLS the short link has nothing to carry: the web app's address alone.
        let withoutToken = PairingPayload(host: "10.1.2.3", session: "s", name: "n", token: nil)
        #expect(try decoder.decode(png: withoutToken.qrCode().pngData()) == "http://10.1.2.3:9099/app")
        // The short link (issue 29 item 2), mixed numeric and byte segments, reads back exactly.
        let short = PairingPayload(
            host: "192.168.100.200", session: "s", name: "n", token: TokenSecret.generate(.pairing),
            pin: "sha256/" + Data(repeating: 0xA5, count: 32).base64EncodedString())
        let shortCode = try short.qrCode()
        #expect(shortCode.version <= 5)
        #expect(try decoder.decode(png: shortCode.pngData()) == short.qrText)
        #expect(try PairingPayload(scannedText: decoder.decode(png: shortCode.pngData())).token == short.token)
        #expect(try PairingPayload(scannedText: decoder.decode(png: code.pngData())) == Self.payload)
    }

    // MARK: - Helpers

    /// Turns half-block text back into module rows (`true` = dark); `nil` on an unexpected character.
    static func parseTerminal(_ text: String, ansi: Bool) -> [[Bool]]? {
        var rows: [[Bool]] = []
        for var line in text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) {
            if ansi {
                guard line.hasPrefix("\u{1B}[97;40m"), line.hasSuffix("\u{1B}[0m") else { return nil }
                line = String(line.dropFirst("\u{1B}[97;40m".count).dropLast("\u{1B}[0m".count))
            }
            var top: [Bool] = []
            var bottom: [Bool] = []
            for character in line {
                switch character {
                case "█":
                    top.append(false)
                    bottom.append(false)
                case "▀":
                    top.append(false)
                    bottom.append(true)
                case "▄":
                    top.append(true)
                    bottom.append(false)
                case " ":
                    top.append(true)
                    bottom.append(true)
                default: return nil
                }
            }
            rows.append(top)
            rows.append(bottom)
        }
        return rows
    }

    /// Decodes a PNG to 8-bit gray pixels with libpng's simplified read API (its errors stay inside C).
    static func decodeGrayPNG(_ png: [UInt8], side: Int) -> [UInt8]? {
        var image = png_image()
        image.version = png_uint_32(PNG_IMAGE_VERSION)
        let began = png.withUnsafeBytes { raw in
            png_image_begin_read_from_memory(&image, raw.baseAddress, raw.count)
        }
        guard began != 0 else { return nil }
        defer { png_image_free(&image) }
        guard Int(image.width) == side, Int(image.height) == side else { return nil }
        image.format = png_uint_32(PNG_FORMAT_GRAY)
        var pixels = [UInt8](repeating: 127, count: side * side)
        let finished = png.withUnsafeBytes { _ in
            pixels.withUnsafeMutableBytes { buffer in
                png_image_finish_read(&image, nil, buffer.baseAddress, 0, nil)
            }
        }
        return finished != 0 ? pixels : nil
    }
}

/// Decodes QR codes with the `zxing-cpp` Python package, when it is installed.
///
/// Looks for a Python in `$OA_BRIDGE_PYTHON`, then `<package>/.venv/bin/python`, then `python3` on the PATH, and uses
/// the first that can `import zxingcpp, PIL`. CI installs them with `pip install zxing-cpp pillow`.
struct ZXingDecoder: Sendable {
    let python: String

    static let unavailableReason: Comment =
        "needs a real QR decoder: python3 -m venv .venv && .venv/bin/pip install zxing-cpp pillow (PyPI: zxing-cpp, pillow)"

    static let shared: ZXingDecoder? = {
        let packageRoot = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        var candidates: [String] = []
        if let configured = ProcessInfo.processInfo.environment["OA_BRIDGE_PYTHON"] { candidates.append(configured) }
        candidates.append(packageRoot.appendingPathComponent(".venv/bin/python").path)
        candidates.append("/usr/bin/python3")
        for python in candidates where FileManager.default.isExecutableFile(atPath: python) {
            if let output = try? run(python, ["-c", "import zxingcpp, PIL; print('ok')"]), output.trimmingCharacters(in: .whitespacesAndNewlines) == "ok" {
                return ZXingDecoder(python: python)
            }
        }
        return nil
    }()

    /// The exact bytes of the single QR code in the PNG, as UTF-8 text.
    func decode(png: [UInt8]) throws -> String {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("oa-bridge-qr-\(UUID().uuidString).png")
        try Data(png).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let script = """
            import sys, zxingcpp
            from PIL import Image
            results = zxingcpp.read_barcodes(Image.open(sys.argv[1]))
            qr = [r for r in results if r.format == zxingcpp.BarcodeFormat.QRCode]
            if len(qr) != 1:
                sys.exit("found %d QR codes" % len(qr))
            sys.stdout.write(bytes(qr[0].bytes).hex())
            """
        let hex = try Self.run(python, ["-c", script, file.path])
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex), index < hex.endIndex {
            guard let byte = UInt8(hex[index..<next], radix: 16) else { break }
            bytes.append(byte)
            index = next
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func run(_ executable: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let errorData = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "\(executable) failed: \(String(decoding: errorData, as: UTF8.self))")
        }
        return String(decoding: data, as: UTF8.self)
    }
}
