import ArgumentParser
import BridgeConfig
import Foundation

/// `oa-bridge config`: the effective configuration and where each value comes from.
struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Show the effective configuration of 'serve' and where each value comes from.",
        discussion: """
        Settings of 'serve' come from the command line, the environment (OA_BRIDGE_<OPTION>), \
        the config file (~/.config/oa-bridge/config.yaml) or the default, in that order; \
        'config show' prints each with its source.

        Examples:
          oa-bridge config
          oa-bridge config show --json
          OA_BRIDGE_PORT=9100 oa-bridge config show --name Studio
        """,
        subcommands: [ConfigShowCommand.self],
        defaultSubcommand: ConfigShowCommand.self
    )
}

/// `oa-bridge config show`.
struct ConfigShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Print every setting of 'serve' with its value and source.",
        discussion: """
        Each setting comes from the first of: the command line (--port 9100), the environment \
        (OA_BRIDGE_PORT=9100), the config file (port: 9100 in ~/.config/oa-bridge/config.yaml, \
        or --config FILE / OA_BRIDGE_CONFIG), the default. Pass serve's options here to see \
        their effect.

        Examples:
          oa-bridge config show
          oa-bridge config show --port 9100 --json
          oa-bridge config show --config ./bridge.yaml
        """
    )

    @OptionGroup var options: ServeOptions

    @Flag(help: "Print as a JSON object: {key: {value, source}}.")
    var json = false

    func run() async throws {
        let settings = try ServeSettings.resolve(options.flags)
        if json {
            var object: [String: [String: String]] = [:]
            for row in settings.rows { object[row.key] = ["value": row.value, "source": row.source] }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(object), as: UTF8.self))
            return
        }
        print("config file: \(settings.configPath)\(settings.configExists ? "" : " (not present)")")
        let width = settings.rows.map(\.key.count).max() ?? 0
        let valueWidth = min(48, settings.rows.map(\.value.count).max() ?? 0)
        for row in settings.rows {
            print("\(row.key.padding(toLength: width, withPad: " ", startingAt: 0))  \(row.value.padding(toLength: valueWidth, withPad: " ", startingAt: 0))  \(row.source)")
        }
    }
}
