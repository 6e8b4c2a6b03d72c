// PhoneClient: what a phone app does, in one small program to copy.
//
//   1. find the desktop on the LAN over mDNS (`_openagents._tcp`),
//   2. pair with what the desktop's QR code holds (its URL, https://…/app#…, or the JSON `oa-bridge pair --json`
//      prints; `PairingPayload(scannedText:)` reads either), keeping the tokens
//      in a private file, and refresh them before they expire,
//   3. connect (the addresses of the service, raced), `initialize`, open a session, prompt, and
//      print the streamed answer.
//
// Usage:
//   swift run PhoneClient '<QR URL or payload JSON>' 'What is in README.md?'
//   swift run PhoneClient - 'hello'            (already paired: uses the saved tokens)
//
// Tokens are kept in ./phone-client-tokens.json (mode 0600).

import BridgeClient
import BridgeDiscovery
import BridgePairingWire
import Foundation
import Logging

@main
struct PhoneClient {
    static func main() async throws {
        let arguments = CommandLine.arguments.dropFirst()
        guard arguments.count == 2, let payloadText = arguments.first, let prompt = arguments.last else {
            print("usage: PhoneClient '<QR payload JSON>'|- 'prompt'")
            return
        }
        let logger = Logger(label: "phone-client")
        let vault = TokenVault(file: URL(fileURLWithPath: "phone-client-tokens.json"))

        // 2. Pair when given a payload: its `http` URL takes the pairing token.
        // The QR code's short link holds the address, the code and a pin prefix: `completed()` asks the bridge for the
        // rest over a connection held to that prefix (a long link or the JSON is complete already).
        let payload = payloadText == "-" ? nil : try await PairingPayload.decode(payloadText).completed()
        if let payload, let token = payload.token {
            // Over https:// the exchange is held to the QR code's certificate pin, which the vault keeps.
            try await vault.pair(bridge: payload.http, pairingToken: token, deviceName: "PhoneClient example", pin: payload.pin)
            print("paired with \(payload.name)")
        }

        // 1. Discovery: the bridge found over mDNS within 3 seconds goes first, the payload's addresses behind it.
        #if os(Linux)
        let backend: any DiscoveryBackend = AvahiBackend(logger: logger)
        #else
        let backend: any DiscoveryBackend = DNSSDBackend(logger: logger)
        #endif
        let candidates = try await BridgeCandidates(
            target: nil, pairing: payload.map { ($0.name, $0.ws, $0.fallbacks) }, tailscale: [], browseTime: .seconds(3)
        ).collect(backend: backend)

        // 3. Connect: race the candidates; the first to answer `initialize` wins. The session reconnects and
        //    resumes by itself if the link drops mid-answer, with tokens the vault refreshes.
        let session = try await BridgeClientSession.connect(
            to: candidates, options: BridgeSessionOptions(clientName: "phone-client-example", pin: try await vault.pin),
            credential: BridgeClientSession.credential(vault: vault), logger: logger)
        print("connected to \(session.first.endpoint.url)")
        defer { session.close() }

        let sessionID = try await session.newSession(cwd: session.first.workingDirectory ?? ".")
        let stopReason = try await session.prompt(sessionID: sessionID, text: prompt) { update, _ in
            if case .messageChunk(let text) = update { print(text, terminator: "") }
        } onPermission: { request in
            // A phone would ask its user; this example allows once.
            request.options.first { $0.kind == "allow_once" }?.id
        }
        print("\n[\(stopReason ?? "unknown")]")
    }
}
