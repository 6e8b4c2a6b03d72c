import ArgumentParser
import BridgePairing
import BridgeServer
import BridgeTLS
import Foundation

/// `oa-bridge identity`: the bridge's TLS identity (certificate and key in the state directory) and its pin.
struct IdentityCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "identity",
        abstract: "Show or rotate this bridge's TLS identity (the certificate phones pin).",
        discussion: """
        'oa-bridge serve' makes a self-signed certificate and key on first start (ECDSA P-256, in the \
        state directory: tls-cert.pem, and tls-key.pem with mode 0600) and reuses them, so the pin phones \
        stored when they paired stays valid. The pin is sha256/ + base64 of SHA-256 over the certificate's \
        public key; curl checks the same value with --pinnedpubkey 'sha256//…'.

        Examples:
          oa-bridge identity show
          oa-bridge identity rotate
        """,
        subcommands: [Show.self, Rotate.self],
        defaultSubcommand: Show.self
    )

    /// `oa-bridge identity show`.
    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the pin, the certificate's names and its expiry (makes the identity if there is none).")

        @Option(help: "Where the bridge keeps its state. Default: $XDG_STATE_HOME/oa-bridge or ~/.local/state/oa-bridge.")
        var stateDir: String?

        @Flag(help: "Print only the pin.")
        var pinOnly = false

        func run() throws {
            let directory = StateDirectory.resolve(override: stateDir)
            let identity = try BridgeIdentity.loadOrCreate(in: directory, names: BridgeService.identityNames(tailnet: nil))
            if pinOnly {
                print(identity.pin)
                return
            }
            print("pin:          \(identity.pin)")
            print("curl:         curl --pinnedpubkey '\(identity.pin.curlArgument)' -k https://…:9099/api/health")
            print("names:        \(identity.dnsNames.joined(separator: ", "))")
            print("expires:      \(ISO8601DateFormatter().string(from: identity.notValidAfter)) (renewed with the same key, same pin)")
            print("certificate:  \(directory.appendingPathComponent(BridgeIdentity.certificateFileName).path)")
        }
    }

    /// `oa-bridge identity rotate`.
    struct Rotate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a new key and certificate: a new pin. Every paired phone must pair again.",
            discussion: """
            Use it when the key may have leaked (a lost backup, a shared disk). Restart 'oa-bridge serve' \
            afterwards: a running bridge keeps the old identity until then. Phones that pinned the old key \
            refuse the bridge (as they should) until they scan a new QR code from 'oa-bridge pair'.
            """)

        @Option(help: "Where the bridge keeps its state. Default: $XDG_STATE_HOME/oa-bridge or ~/.local/state/oa-bridge.")
        var stateDir: String?

        func run() throws {
            let directory = StateDirectory.resolve(override: stateDir)
            let before = try BridgeIdentity.storedPin(in: directory)
            let identity = try BridgeIdentity.rotate(in: directory, names: BridgeService.identityNames(tailnet: nil))
            if let before { print("old pin:  \(before)") }
            print("new pin:  \(identity.pin)")
            print("Restart 'oa-bridge serve', then pair every phone again ('oa-bridge pair' shows the new QR code).")
        }
    }
}
