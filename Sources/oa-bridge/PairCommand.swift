import ArgumentParser
import BridgeClient
import BridgePairing
import BridgePairingUI
import Foundation

/// `oa-bridge pair`: show the pairing QR code of the running bridge again.
struct PairCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pair",
        abstract: "Show the running bridge's pairing QR code (and URL) again, or make a new one.",
        discussion: """
        Asks the bridge on this desktop (http://127.0.0.1:PORT/api/pair/info; the pairing \
        endpoints answer only on loopback) for the current pairing code and prints it as a QR \
        code for the phone's camera, with the instructions beside it (80 columns, fewer than 24 \
        rows). In a smaller terminal it says so and prints the link instead; --png writes the \
        code as an image. The code works once and expires after an hour; --new revokes it and \
        makes another. After each pairing 'oa-bridge serve' prints a new one.

        The QR code holds a short link: https://ADDRESS:PORT/app#1<78 digits> (the pairing \
        code and the first half of the certificate pin). --json prints the whole payload: \
        {"ws","http","session","name","token","fallbacks","pin","url"} (token absent with \
        --auth none; pin, the TLS certificate pin, absent when the bridge serves plaintext \
        only; url, the text of the QR code).

        Examples:
          oa-bridge pair
          oa-bridge pair --new
          oa-bridge pair --png pairing.png
          oa-bridge pair --json --port 9100
        """
    )

    @Option(help: "The port the bridge listens on.")
    var port: Int = 9099

    @Flag(help: "Revoke the current code and make a new one.")
    var new = false

    @Flag(help: "Print the payload as JSON instead of a QR code.")
    var json = false

    @Option(help: ArgumentHelp("Write the QR code as a PNG image to FILE (mode 0600: it holds the pairing code).", valueName: "FILE"))
    var png: String?

    func run() async throws {
        let payload: PairingPayload
        do {
            payload = try await LocalPairingCode(port: port).fetch(rotate: new)
        } catch {
            throw PairCommandError(description: error.description)
        }
        if json {
            print(PairingInfo(payload: payload).jsonString())
            return
        }
        if let png {
            let bytes = try payload.qrCode().pngData(scale: 8, quietZone: 4)
            let url = URL(fileURLWithPath: png)
            FileManager.default.createFile(atPath: url.path, contents: nil, attributes: [.posixPermissions: 0o600])
            do {
                try Data(bytes).write(to: url)
            } catch {
                throw PairCommandError(description: "cannot write \(png): \(error.localizedDescription)")
            }
            print("Wrote the pairing QR code to \(png) (it works once; open the image and scan it with the phone's camera).")
            return
        }
        print(try PairingBanner.text(
            payload: payload, expiresAt: nil, port: port, ansiColors: isatty(STDOUT_FILENO) != 0,
            terminal: PairingBanner.TerminalSize.ofStandardOutput(), commands: FlagAdvice.pairingCommands(port: port)), terminator: "")
    }
}

/// A runtime failure of `oa-bridge pair` (no bridge answered, a file could not be written): printed without usage.
struct PairCommandError: Error, CustomStringConvertible {
    let description: String
}
