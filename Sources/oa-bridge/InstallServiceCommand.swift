import ArgumentParser
import BridgeConfig
import BridgeProcess
import Foundation

/// `oa-bridge install-service`: run the bridge as a systemd user service on a headless box.
struct InstallServiceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "install-service",
        abstract: "Write and enable a systemd user unit that runs 'oa-bridge serve'.",
        discussion: """
        Writes ~/.config/systemd/user/oa-bridge.service, then runs 'systemctl --user \
        daemon-reload' and 'systemctl --user enable --now oa-bridge'. Settings come from the \
        config file (~/.config/oa-bridge/config.yaml) or the serve options given after '--'.

        On a headless machine, let the user's services run without a login session: \
        'sudo loginctl enable-linger $USER'. Logs: 'journalctl --user -u oa-bridge -f'.

        Examples:
          oa-bridge install-service --print
          oa-bridge install-service -- --name Studio --agent 'gemini --acp'
        """
    )

    @Flag(help: "Print the unit instead of installing it.")
    var print = false

    @Option(help: "The unit's name (without .service).")
    var unitName: String = "oa-bridge"

    @Argument(parsing: .postTerminator, help: "Options passed to 'oa-bridge serve'.")
    var serveArguments: [String] = []

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        let executable = SystemdUnit.executable(
            argument0: CommandLine.arguments.first ?? "oa-bridge", currentDirectory: FileManager.default.currentDirectoryPath,
            searchPath: environment["PATH"])
        let unit = SystemdUnit.render(executable: executable, serveArguments: serveArguments)
        if print {
            Swift.print(unit, terminator: "")
            return
        }
        let path = SystemdUnit.userUnitPath(name: unitName, environment: environment)
        let directory = (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try unit.write(toFile: path, atomically: true, encoding: .utf8)
        Swift.print("wrote \(path)")
        for arguments in [["--user", "daemon-reload"], ["--user", "enable", "--now", unitName]] {
            let status = try await InstallServiceCommand.systemctl(arguments)
            guard status == 0 else {
                throw ValidationError("'systemctl \(arguments.joined(separator: " "))' failed (exit \(status)). Is there a user systemd instance? On a headless box: 'sudo loginctl enable-linger $USER', then log in again.")
            }
        }
        Swift.print("enabled and started \(unitName).service; logs: journalctl --user -u \(unitName) -f")
        Swift.print("headless: 'sudo loginctl enable-linger \(environment["USER"] ?? "$USER")' keeps it running without a login")
    }

    /// Runs `systemctl` (through `/usr/bin/env`, on PATH) with the terminal's input and output; its exit status (128 +
    /// the signal if one ended it).
    ///
    /// Throws ``ChildProcessError`` (with its errno) when it cannot start.
    static func systemctl(_ arguments: [String]) async throws -> Int32 {
        let process = try ChildProcess.spawn(ChildProcess.Request(
            executable: "/usr/bin/env", arguments: ["systemctl"] + arguments, environment: ProcessInfo.processInfo.environment,
            input: STDIN_FILENO, output: STDOUT_FILENO, error: STDERR_FILENO, supervised: false))
        switch await process.wait() {
        case .exited(let code): return code
        case .signaled(let signal): return 128 + signal
        }
    }
}
