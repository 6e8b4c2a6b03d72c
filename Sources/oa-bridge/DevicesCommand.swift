import ArgumentParser
import BridgePairing
import Foundation
import Logging

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

        /// The store, its own log lines at warning and above only: this command prints what it did, once
        /// (issue 29 item 9: "device approved" came twice, as a log line and as the command's answer).
        func open() throws -> TokenStore {
            var logger = Logger(label: "oa-bridge.devices")
            logger.logLevel = .warning
            return try TokenStore(directory: StateDirectory.resolve(override: stateDir), logger: logger)
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
            print(DeviceTable.text(devices), terminator: "")
        }
    }

    struct Approve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Approve a pending device (with serve --require-approval).")
        @OptionGroup var store: StoreOptions
        @Argument(help: "The device id, or a unique prefix of it.") var id: String

        func run() async throws {
            let tokens = try store.open()
            let found = try await tokens.findDevice(idOrPrefix: id)
            if found.approved && !found.isRevoked {
                print("\(found.name) (\(found.id)) is already active: nothing to approve")
                return
            }
            let device = try await tokens.approve(deviceID: id)
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

/// The `oa-bridge devices` table: every column as wide as its longest value, so no name is cut (issue 29 item 9).
enum DeviceTable {
    static func text(_ devices: [DeviceRecord]) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm'Z'"
        // DPOP: whether the device's tokens are bound to its key (issue 30); "unbound" devices were paired before DPoP
        // (or by a client without it) and stop working under `serve --dpop required` until they pair again.
        let header = ["ID", "NAME", "STATE", "DPOP", "PAIRED", "LAST SEEN", "LAST ADDRESS"]
        let rows = devices.map { device in
            [
                String(device.id.prefix(8)),
                TerminalSafe.line(device.name),
                device.isRevoked ? "revoked" : device.isPending ? "pending" : "active",
                device.isRevoked || device.isPending ? "-" : device.dpopBound == true ? "bound" : "unbound",
                formatter.string(from: device.createdAt),
                device.lastSeenAt.map(formatter.string) ?? "-",
                device.lastAddress ?? "-",
            ]
        }
        let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        return ([header] + rows).map { row in
            row.indices.map { column in
                column == row.count - 1 ? row[column] : row[column].padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n") + "\n"
    }
}

/// Device names come from phones: control characters are shown escaped, never sent to the terminal.
enum TerminalSafe {
    static func line(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            if scalar.properties.generalCategory == .control || scalar.properties.generalCategory == .format {
                out += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
