import ArgumentParser
import BridgePairing
import BridgePairingUI
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

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
        let base = "http://127.0.0.1:\(port)"
        let (data, status) = try await LoopbackHTTP.request(new ? "POST" : "GET", base + (new ? "/api/pair/refresh" : "/api/pair/info"), body: new ? Data("{}".utf8) : nil)
        guard status == 200 else {
            throw ValidationError("the bridge on port \(port) answered HTTP \(status): \(String(decoding: data, as: UTF8.self))")
        }
        let payload = try PairingJSON.decoder.decode(PairingPayload.self, from: data)
        if json {
            print(payload.jsonString())
            return
        }
        print(try PairingBanner.text(payload: payload, expiresAt: nil, port: port, ansiColors: isatty(STDOUT_FILENO) != 0))
    }
}

/// Plain HTTP to the bridge on loopback.
enum LoopbackHTTP {
    static func request(_ method: String, _ url: String, body: Data? = nil) async throws -> (Data, Int) {
        guard let target = URL(string: url) else { throw ValidationError("bad URL \(url)") }
        var request = URLRequest(url: target)
        request.httpMethod = method
        request.timeoutInterval = 5
        if let body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        do {
            let (data, response) = try await URLSession(configuration: .ephemeral).data(for: request)
            return (data, (response as? HTTPURLResponse)?.statusCode ?? 0)
        } catch {
            throw ValidationError("cannot reach the bridge at \(url): \(error.localizedDescription). Is 'oa-bridge serve' running (with --port if not 9099)?")
        }
    }
}
