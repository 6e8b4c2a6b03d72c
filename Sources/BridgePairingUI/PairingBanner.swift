import BridgePairingWire
import Foundation

/// What `oa-bridge serve` and `oa-bridge pair` print in the terminal: the QR code and how else to pair.
///
/// The text contains the pairing token inside the QR code, so print it to the terminal only, never to a log.
public enum PairingBanner {
    /// The QR code of the web app URL (Unicode half blocks, explicit colours unless `ansiColors` is false), what
    /// scanning it opens, the one warning a phone shows the first time and the certificate fingerprint that makes it
    /// safe to accept, the pairing page URL and the code's expiry; with auth off (`payload.token == nil`) a loud
    /// warning. Every line but the QR code fits 80 columns.
    /// - Parameters:
    ///   - port: the port the bridge listens on, for the `http://127.0.0.1:<port>/pair` line.
    ///   - certificateFingerprint: the TLS certificate's SHA-256 fingerprint as browsers show it
    ///     (`BridgeIdentity.certificateFingerprint`); `nil` leaves the certificate lines out.
    ///   - now: the current time, for "expires in N min".
    public static func text(
        payload: PairingPayload, expiresAt: Date?, port: Int, certificateFingerprint: String? = nil, now: Date = Date(),
        ansiColors: Bool = true
    ) throws(QRCodeError) -> String {
        var lines: [String] = []
        lines.append(try payload.qrCode().terminalString(quietZone: 2, ansiColors: ansiColors))
        lines.append("Scan with the phone's camera to pair with \(payload.name): it opens the web app at")
        lines.append("  \(payload.http)/app (nothing to install).")
        if let certificateFingerprint, payload.http.hasPrefix("https:") {
            lines.append("The first time, the phone warns \"Your connection is not private\": the")
            lines.append("certificate is this bridge's own. Continue if its SHA-256 fingerprint reads:")
            lines.append(contentsOf: fingerprintLines(certificateFingerprint))
        }
        lines.append("Or open http://127.0.0.1:\(port)/pair in a browser on this desktop.")
        if payload.token != nil {
            if let expiresAt {
                let minutes = max(0, Int((expiresAt.timeIntervalSince(now) / 60).rounded()))
                lines.append("The code works once and expires in \(minutes) min; 'oa-bridge pair' shows a new one.")
            }
        } else {
            lines.append(warning(ansiColors: ansiColors))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The fingerprint's 32 bytes as two indented lines of 16 (each 49 columns wide).
    static func fingerprintLines(_ fingerprint: String) -> [String] {
        let bytes = fingerprint.split(separator: " ")
        return stride(from: 0, to: bytes.count, by: 16).map { start in
            "  " + bytes[start..<min(start + 16, bytes.count)].joined(separator: " ")
        }
    }

    /// The warning for `--auth none`, bold red when `ansiColors`.
    public static func warning(ansiColors: Bool = true) -> String {
        let text = "WARNING: authentication is OFF (--auth none). Anyone who can reach this port from an allowed network can drive this desktop."
        return ansiColors ? "\u{1B}[1;31m\(text)\u{1B}[0m" : text
    }
}
