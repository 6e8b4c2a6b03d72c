import ArgumentParser
import BridgePairing
import Foundation

/// `oa-bridge devices`: the phones paired with this desktop.
struct DevicesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "List, approve and revoke paired devices.",
        discussion: """
        Works on the token store in the state directory, so it works whether or not the bridge \
        runs; a running bridge notices a revocation within a second and closes that device's \
        connections (close code 4003).

        Examples:
          oa-bridge devices
          oa-bridge devices list --json --all
          oa-bridge devices approve 3f2a
          oa-bridge devices revoke 3f2a
          oa-bridge devices revoke --all
        """,
        subcommands: [List.self, Approve.self, Revoke.self],
        defaultSubcommand: List.self
    )

    /// Options every devices subcommand takes.
    struct StoreOptions: ParsableArguments {
        @Option(help: "Where the bridge keeps its state. Default: $XDG_STATE_HOME/oa-bridge or ~/.local/state/oa-bridge.")
        var stateDir: String?

        func open() throws -> TokenStore {
            try TokenStore(directory: StateDirectory.resolve(override: stateDir))
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List paired devices (and pending ones).")
        @OptionGroup var store: StoreOptions
        @Flag(help: "Print as JSON.") var json = false
        @Flag(help: "Include revoked devices.") var all = false

        func run() async throws {
            let devices = try await store.open().listDevices(includeRevoked: all)
            if json {
                let encoder = PairingJSON.encoder
                print(String(decoding: try encoder.encode(devices), as: UTF8.self))
                return
            }
            guard !devices.isEmpty else {
                print("No paired devices. Pair a phone by scanning the QR code 'oa-bridge pair' shows.")
                return
            }
            let formatter = ISO8601DateFormatter()
            print("ID        NAME                  STATE     PAIRED                LAST SEEN             LAST ADDRESS")
            for device in devices {
                let state = device.isRevoked ? "revoked" : device.isPending ? "pending" : "active"
                print([
                    String(device.id.prefix(8)).padding(toLength: 8, withPad: " ", startingAt: 0),
                    String(device.name.prefix(20)).padding(toLength: 20, withPad: " ", startingAt: 0),
                    state.padding(toLength: 8, withPad: " ", startingAt: 0),
                    formatter.string(from: device.createdAt).padding(toLength: 20, withPad: " ", startingAt: 0),
                    (device.lastSeenAt.map(formatter.string) ?? "-").padding(toLength: 20, withPad: " ", startingAt: 0),
                    device.lastAddress ?? "-",
                ].joined(separator: "  "))
            }
        }
    }

    struct Approve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Approve a pending device (with serve --require-approval).")
        @OptionGroup var store: StoreOptions
        @Argument(help: "The device id, or a unique prefix of it.") var id: String

        func run() async throws {
            let device = try await store.open().approve(deviceID: id)
            print("approved \(device.name) (\(device.id)); the phone receives its tokens on its next try")
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke a device (or --all): its tokens stop working and its connections close.")
        @OptionGroup var store: StoreOptions
        @Argument(help: "The device id, or a unique prefix of it.") var id: String?
        @Flag(help: "Revoke every device.") var all = false

        func validate() throws {
            guard (id != nil) != all else { throw ValidationError("give a device id or --all (not both)") }
        }

        func run() async throws {
            let tokens = try store.open()
            if all {
                let revoked = try await tokens.revokeAllDevices()
                print("revoked \(revoked.count) device(s)")
            } else if let id {
                let device = try await tokens.revoke(deviceID: id)
                print("revoked \(device.name) (\(device.id))")
            }
        }
    }
}
