public import BridgePairingWire
public import Foundation

/// What `oa-bridge serve` and `oa-bridge pair` print in the terminal: the QR code and how else to pair.
///
/// The text contains the pairing token inside the QR code, so print it to the terminal only, never to a log.
public enum PairingBanner {
    /// A terminal's size in character cells.
    public struct TerminalSize: Sendable, Equatable {
        /// Columns.
        public var columns: Int
        /// Rows.
        public var rows: Int

        /// A size of `columns` × `rows`.
        public init(columns: Int, rows: Int) {
            self.columns = columns
            self.rows = rows
        }

        /// The classic terminal (and the size assumed when output is not a terminal): 80 × 24.
        public static let standard = TerminalSize(columns: 80, rows: 24)
    }

    /// The commands a small terminal's lines name to show the code again and to save it as an image: the caller's
    /// (the command line knows its own flags, issue 31 item 5); without them, the lines say it in words.
    public struct Commands: Sendable, Equatable {
        /// The command that shows the code again, for example `oa-bridge pair --port 9100`.
        public var show: String
        /// The command that saves the code as an image, for example `oa-bridge pair --port 9100 --png pairing.png`.
        public var savePNG: String

        /// Commands with these texts.
        public init(show: String, savePNG: String) {
            self.show = show
            self.savePNG = savePNG
        }
    }

    /// The widest the banner gets, whatever the terminal.
    public static let maximumWidth = 80
    /// The widest column of text beside the code.
    static let maximumTextWidth = 37
    /// The narrowest column of text beside the code.
    static let minimumTextWidth = 28
    /// Columns between the code and its text.
    static let gutter = 2
    /// Light modules around the code: 2 keeps it small; the terminal's own background does not count (it may be dark).
    static let quietZone = 2

    /// The QR code of the short pairing link with its instructions to the right of it (the whole block fits 80 columns
    /// and, for an IPv4 LAN address, fewer than 24 rows): what scanning it opens, the one warning a phone shows the
    /// first time and the certificate fingerprint that makes it safe to accept, the pairing page URL and the code's
    /// expiry; with auth off (`payload.token == nil`) a loud warning.
    ///
    /// When `terminal` is too small for the code (it would wrap and could not be scanned), the text says so instead
    /// and gives the command that saves the code as an image (`commands`) and the link itself.
    /// - Parameters:
    ///   - payload: what the QR code holds (its web app URL) and the lines print.
    ///   - expiresAt: when the pairing token expires, for "expires in N min"; `nil` leaves that out.
    ///   - port: the port the bridge listens on, for the `http://127.0.0.1:<port>/pair` line.
    ///   - certificateFingerprint: the TLS certificate's SHA-256 fingerprint as browsers show it
    ///     (`BridgeIdentity.certificateFingerprint`); `nil` leaves the certificate lines out.
    ///   - now: the current time, for "expires in N min".
    ///   - ansiColors: whether the code's lines set their colours (see ``QRCode/terminalString(quietZone:ansiColors:)``).
    ///   - terminal: the terminal's size; `nil` (output is not a terminal) assumes 80 × 24.
    ///   - commands: the caller's commands that show the code again and save it as an image, for a terminal too small
    ///     for the code; `nil` says it in words.
    /// - Returns: the banner, as text to print.
    /// - Throws: ``QRCodeError`` when the QR code cannot be made (a URL too long for one).
    public static func text(
        payload: PairingPayload, expiresAt: Date?, port: Int, certificateFingerprint: String? = nil, now: Date = Date(),
        ansiColors: Bool = true, terminal: TerminalSize? = nil, commands: Commands? = nil
    ) throws(QRCodeError) -> String {
        let size = terminal ?? .standard
        let code = try payload.qrCode()
        let qrLines = code.terminalLines(quietZone: quietZone, ansiColors: ansiColors)
        let codeWidth = code.size + 2 * quietZone
        let width = min(size.columns, maximumWidth)
        // At most 37 columns (what is left beside a version 5 code): the words wrap the same beside every code that
        // fits, so the README's example is what every desktop prints.
        let textWidth = min(maximumTextWidth, width - codeWidth - gutter)
        let fingerprint = certificateFingerprint.flatMap { payload.http.hasPrefix("https:") ? $0 : nil }
        if textWidth >= minimumTextWidth {
            let text = besideCode(
                payload: payload, expiresAt: expiresAt, port: port, fingerprint: fingerprint, now: now,
                ansiColors: ansiColors, width: textWidth)
            let height = max(qrLines.count, text.count)
            // One row stays free for the cursor (or the next log line) below the block.
            if height + 1 <= size.rows {
                let blank = String(repeating: " ", count: codeWidth)
                let pad = String(repeating: " ", count: gutter)
                let lines = (0..<height).map { index -> String in
                    let left = index < qrLines.count ? qrLines[index] : blank
                    let right = index < text.count ? text[index] : ""
                    return right.isEmpty ? left : left + pad + right
                }
                return lines.joined(separator: "\n") + "\n"
            }
        }
        return tooSmall(
            payload: payload, expiresAt: expiresAt, port: port, fingerprint: fingerprint, now: now, ansiColors: ansiColors,
            size: size, needed: TerminalSize(columns: codeWidth + gutter + minimumTextWidth, rows: qrLines.count + 1), commands: commands)
    }

    /// The column of text beside the code, wrapped to `width`.
    ///
    /// What varies (the name, the URLs, the expiry) stands on lines of its own, so the rest wraps the same way on
    /// every desktop.
    static func besideCode(
        payload: PairingPayload, expiresAt: Date?, port: Int, fingerprint: String?, now: Date, ansiColors: Bool, width: Int
    ) -> [String] {
        var lines: [String] = []
        lines += wrap("Pair a phone with \(payload.name).", width)
        lines += wrap("Scan with the phone's camera: it opens the web app (nothing to install):", width)
        lines.append("  " + payload.http + PairingPayload.appPath)
        if let fingerprint {
            lines.append("")
            lines += wrap("The first time, the phone warns \"Your connection is not private\": the certificate is this bridge's own. Continue if its SHA-256 fingerprint reads:", width)
            lines += fingerprintLines(fingerprint, width: width - 2).map { "  " + $0 }
        }
        lines.append("")
        lines += wrap("The desktop's pairing page:", width)
        lines.append("  http://127.0.0.1:\(port)/pair")
        if payload.token != nil {
            if let expiresAt {
                let minutes = max(0, Int((expiresAt.timeIntervalSince(now) / 60).rounded()))
                lines.append("Single use; expires in \(minutes) min.")
            }
            lines += wrap("A new code follows each pairing.", width)
        } else {
            lines += wrap(warningText, width).map { ansiColors ? "\u{1B}[1;31m\($0)\u{1B}[0m" : $0 }
        }
        return lines
    }

    /// What is printed instead of a code that would not fit: the sizes, the command that saves the code as an image
    /// (`commands`, or those words) and the link.
    static func tooSmallLines(
        payload: PairingPayload, expiresAt: Date?, port: Int, fingerprint: String?, now: Date, ansiColors: Bool,
        size: TerminalSize, needed: TerminalSize, commands: Commands? = nil
    ) -> [String] {
        let width = max(40, min(size.columns, maximumWidth))
        var lines: [String] = []
        let tooSmall = "This terminal (\(size.columns)×\(size.rows)) is too small for the pairing QR code: it needs \(needed.columns)×\(needed.rows)."
        if let commands {
            lines += wrap(tooSmall + " Make the window larger and run '\(commands.show)', or save the code as an image and show that:", width)
            lines.append("  " + commands.savePNG)
        } else {
            lines += wrap(tooSmall + " Make the window larger and show the code again, or save it as an image and show that.", width)
        }
        lines += wrap("Or open this link on the phone (it holds the pairing code):", width)
        lines.append("  " + payload.qrText)
        if let fingerprint {
            lines += wrap("The first time, the phone warns \"Your connection is not private\": continue if the certificate's SHA-256 fingerprint reads:", width)
            lines += fingerprintLines(fingerprint, width: width - 2).map { "  " + $0 }
        }
        lines += wrap("Or open http://127.0.0.1:\(port)/pair on this desktop.", width)
        if payload.token != nil {
            lines += wrap(expiryText(expiresAt: expiresAt, now: now, show: commands?.show), width)
        } else {
            lines.append(warning(ansiColors: ansiColors))
        }
        return lines
    }

    private static func tooSmall(
        payload: PairingPayload, expiresAt: Date?, port: Int, fingerprint: String?, now: Date, ansiColors: Bool,
        size: TerminalSize, needed: TerminalSize, commands: Commands?
    ) -> String {
        let lines = tooSmallLines(
            payload: payload, expiresAt: expiresAt, port: port, fingerprint: fingerprint, now: now, ansiColors: ansiColors,
            size: size, needed: needed, commands: commands)
        return lines.joined(separator: "\n") + "\n"
    }

    /// When the code expires and what shows a new one: the caller's command `show`, or words.
    static func expiryText(expiresAt: Date?, now: Date, show: String?) -> String {
        let again = show.map { "'\($0)' shows a new one." } ?? "the desktop's pairing command shows a new one."
        guard let expiresAt else { return "The code works once; " + again }
        let minutes = max(0, Int((expiresAt.timeIntervalSince(now) / 60).rounded()))
        return "The code works once and expires in \(minutes) min; " + again
    }

    /// The fingerprint's bytes (`AB CD …`), as many a line as fit `width`.
    static func fingerprintLines(_ fingerprint: String, width: Int) -> [String] {
        let bytes = fingerprint.split(separator: " ")
        let perLine = max(1, min(16, (width + 1) / 3))
        return stride(from: 0, to: bytes.count, by: perLine).map { start in
            bytes[start..<min(start + perLine, bytes.count)].joined(separator: " ")
        }
    }

    /// Greedy word wrap to `width` columns; a phrase in double quotes stays on one line; a word longer than a line is
    /// cut.
    static func wrap(_ text: String, _ width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        var words: [Substring] = []
        var quoted: Substring?
        for word in text.split(separator: " ", omittingEmptySubsequences: true) {
            if let open = quoted {
                let joined = text[open.startIndex..<word.endIndex]
                if word.contains("\"") {
                    words.append(joined)
                    quoted = nil
                } else {
                    quoted = joined
                }
            } else if word.hasPrefix("\""), word.filter({ $0 == "\"" }).count == 1 {
                quoted = word
            } else {
                words.append(word)
            }
        }
        if let quoted { words.append(quoted) }
        for word in words {
            var word = Substring(word)
            if line.isEmpty {
                while word.count > width {
                    lines.append(String(word.prefix(width)))
                    word = word.dropFirst(width)
                }
                line = String(word)
            } else if line.count + 1 + word.count <= width {
                line += " " + word
            } else {
                lines.append(line)
                line = ""
                while word.count > width {
                    lines.append(String(word.prefix(width)))
                    word = word.dropFirst(width)
                }
                line = String(word)
            }
        }
        if !line.isEmpty { lines.append(line) }
        return lines
    }

    static let warningText = "WARNING: authentication is OFF in the bridge's settings (auth: none). Anyone who can reach this port from an allowed network can drive this desktop."

    /// The warning for authentication off (`auth: none`), bold red when `ansiColors`.
    public static func warning(ansiColors: Bool = true) -> String {
        ansiColors ? "\u{1B}[1;31m\(warningText)\u{1B}[0m" : warningText
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension PairingBanner.TerminalSize {
    /// The size of the terminal on standard output, or `nil` when it is not a terminal (or does not say).
    public static func ofStandardOutput() -> PairingBanner.TerminalSize? {
        guard isatty(STDOUT_FILENO) != 0 else { return nil }
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0, size.ws_row > 0 else { return nil }
        return PairingBanner.TerminalSize(columns: Int(size.ws_col), rows: Int(size.ws_row))
    }
}
