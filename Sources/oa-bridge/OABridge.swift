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
    ///
    /// The usage is printed only after a usage error (parsing or a command's `validate()`); an error while the
    /// command runs is printed as `Error: …` alone (issue 29 item 9), with the same exit status as before (2 for a
    /// ValidationError).
    static func main() async {
        var command: any ParsableCommand
        do {
            command = try parseAsRoot()
        } catch {
            if exitCode(for: error) == .validationFailure {
                FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
                Foundation.exit(2)
            }
            exit(withError: error)
        }
        do {
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            // --help and --version end in run() too (ArgumentParser's help command), as does an explicit ExitCode.
            if code == .success || error is ExitCode || error is CleanExit { exit(withError: error) }
            var text = message(for: error)
            if let advice = FlagAdvice.advice(for: error) {
                // The library's sentence, then the flag's: "…; set HOME or choose another file scope. Choose… --fs-scope."
                if let last = text.last, !".!?".contains(last) { text += "." }
                text += " " + advice
            }
            if !text.isEmpty { FileHandle.standardError.write(Data("Error: \(text)\n".utf8)) }
            Foundation.exit(code == .validationFailure ? 2 : code.rawValue == 0 ? 1 : code.rawValue)
        }
    }
}

/// The version printed by `--version` and sent as `agent_info.version`.
enum BridgeVersion {
    static let current = "0.1.0"
}
