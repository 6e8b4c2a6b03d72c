// PhoneClient: what a phone app does, in one small program to copy.
//
//   1. find the desktop on the LAN over mDNS (`_openagents._tcp`),
//   2. pair with the QR payload the desktop shows (`oa-bridge pair --json`), keeping the tokens
//      in a private file, and refresh them before they expire,
//   3. connect (the addresses of the service, raced), `initialize`, open a session, prompt, and
//      print the streamed answer.
//
// Usage:
//   swift run PhoneClient '<QR payload JSON>' 'What is in README.md?'
//   swift run PhoneClient - 'hello'            (already paired: uses the saved tokens)
//
// Tokens are kept in ./phone-client-tokens.json (mode 0600).

import BridgeClient
import BridgeDiscovery
import BridgePairing
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

        // 1 + 2. Pair when given a payload: its `http` URL takes the pairing token.
        var candidates: [BridgeEndpoint] = []
        if payloadText != "-" {
            let payload = try PairingPayload.decode(payloadText)
            if let token = payload.token {
                try await vault.pair(bridge: payload.http, pairingToken: token, deviceName: "PhoneClient example")
                print("paired with \(payload.name)")
            }
            candidates.append(try BridgeEndpoint.manual(payload.ws))
            candidates += try payload.fallbacks.map { try BridgeEndpoint.manual($0, source: .tailscale) }
        }

        // 1. Discovery: the first bridge that resolves within 3 seconds goes first in line.
        #if os(Linux)
        let backend: any DiscoveryBackend = AvahiBackend(logger: logger)
        #else
        let backend: any DiscoveryBackend = DNSSDBackend(logger: logger)
        #endif
        let events = backend.browse(.openAgents, domain: nil)
        let found: ResolvedService? = await withTaskGroup(of: ResolvedService?.self) { group in
            group.addTask {
                for await event in events {
                    if case .added(let service) = event { return service }
                }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(3))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        if let found {
            print("found '\(found.instance.name)' at \(found.addresses.map(\.description).joined(separator: ", "))")
            candidates.insert(contentsOf: BridgeEndpoint.candidates(for: found), at: 0)
        }

        // 3. Connect: race the candidates; the first to answer `initialize` wins.
        let token = await vault.current == nil ? nil : try await vault.accessToken()
        let (endpoint, client, _) = try await HappyEyeballs().race(candidates) { endpoint in
            let connection = try await BridgeRPCClient.connect(to: endpoint.url, token: token, logger: logger)
            let client = BridgeAgentClient(connection: connection)
            try await client.initialize(clientName: "phone-client-example")
            return client
        }
        print("connected to \(endpoint.url)")
        defer { client.connection.close() }

        let sessionID = try await client.newSession(cwd: ".")
        let stopReason = try await client.prompt(sessionID: sessionID, text: prompt) { update in
            if case .messageChunk(let text) = update { print(text, terminator: "") }
        } onPermission: { request in
            // A phone would ask its user; this example allows once.
            request.options.first { $0.kind == "allow_once" }?.id
        }
        print("\n[\(stopReason)]")
    }
}
