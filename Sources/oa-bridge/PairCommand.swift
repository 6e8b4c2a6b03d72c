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
        endpoints answer only on loopback) for the current pairing payload and prints it as a \
        QR code for the phone's camera. The code works once and expires after an hour; --new \
        revokes it and makes another.

        The payload: {"ws","http","session","name","token","fallbacks","pin"} (token absent with \
        --auth none; pin, the TLS certificate pin, absent when the bridge serves plaintext only).

        Examples:
          oa-bridge pair
          oa-bridge pair --new
          oa-bridge pair --json --port 9100
        """
    )

    @Option(help: "The port the bridge listens on.")
    var port: Int = 9099

    @Flag(help: "Revoke the current code and make a new one.")
    var new = false

    @Flag(help: "Print the payload as JSON instead of a QR code.")
    var json = false

    func run() async throws {
        let payload: PairingPayload
        do {
            payload = try await LocalPairingCode(port: port).fetch(rotate: new)
        } catch {
            throw ValidationError(error.description)
        }
        if json {
            print(payload.jsonString())
            return
        }
        print(try PairingBanner.text(payload: payload, expiresAt: nil, port: port, ansiColors: isatty(STDOUT_FILENO) != 0))
    }
}
