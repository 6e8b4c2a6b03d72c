import ArgumentParser
import Foundation

/// The `oa-bridge` command: serve a desktop to phones, and find bridges on the network.
@main
struct OABridge: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "oa-bridge",
        abstract: "Let a phone find and drive this desktop's agent over the local network.",
        discussion: """
        Run 'oa-bridge serve' on the desktop: it listens for phones on a JSON-RPC WebSocket \
        (port 9099) and advertises itself over mDNS as _openagents._tcp. Run 'oa-bridge discover' \
        anywhere on the same network to see what is advertised and whether it answers.
        """,
        version: BridgeVersion.current,
        subcommands: [ServeCommand.self, DiscoverCommand.self, ConnectCommand.self, PairCommand.self, DevicesCommand.self, DoctorCommand.self, ConfigCommand.self, InstallServiceCommand.self, IdentityCommand.self]
    )

    /// Parses and runs, exiting 2 (not ArgumentParser's 64) on usage errors, as documented.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            if code == .validationFailure {
                FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
                Foundation.exit(2)
            }
            exit(withError: error)
        }
    }
}

/// The version printed by `--version` and sent as `agent_info.version`.
enum BridgeVersion {
    static let current = "0.1.0"
}
