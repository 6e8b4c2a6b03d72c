import BridgePairingWire
import Foundation

/// What `oa-bridge serve` and `oa-bridge pair` print in the terminal: the QR code and how else to pair.
///
/// The text contains the pairing token inside the QR code, so print it to the terminal only, never to a log.
public enum PairingBanner {
    /// The QR code of the web app URL (Unicode half blocks, explicit colours unless `ansiColors` is false), then the pairing page URL,
    /// the address the phone will use, and the code's expiry; with auth off (`payload.token == nil`) a loud warning.
    /// - Parameters:
    ///   - port: the port the bridge listens on, for the `http://127.0.0.1:<port>/pair` line.
    ///   - now: the current time, for "expires in N min".
    public static func text(
        payload: PairingPayload, expiresAt: Date?, port: Int, now: Date = Date(), ansiColors: Bool = true
    ) throws(QRCodeError) -> String {
        var lines: [String] = []
        lines.append(try payload.qrCode().terminalString(quietZone: 2, ansiColors: ansiColors))
        lines.append("Scan with the oa-bridge app or the phone's camera (it opens the web app) to pair with \(payload.name) (\(payload.http)).")
        lines.append("Or open http://127.0.0.1:\(port)/pair in a browser on this desktop.")
        if let pin = payload.pin {
            lines.append("TLS pin: \(pin) (the QR code carries it; a phone pairing by hand compares it with this).")
        }
        if payload.token != nil {
            if let expiresAt {
                let minutes = max(0, Int((expiresAt.timeIntervalSince(now) / 60).rounded()))
                lines.append("The code works once and expires in \(minutes) min; run 'oa-bridge pair' for a new one.")
            }
        } else {
            lines.append(warning(ansiColors: ansiColors))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The warning for `--auth none`, bold red when `ansiColors`.
    public static func warning(ansiColors: Bool = true) -> String {
        let text = "WARNING: authentication is OFF (--auth none). Anyone who can reach this port from an allowed network can drive this desktop."
        return ansiColors ? "\u{1B}[1;31m\(text)\u{1B}[0m" : text
    }
}
