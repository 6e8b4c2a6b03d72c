import Foundation

/// The systemd user unit that runs `oa-bridge serve` (what `oa-bridge install-service` writes).
public enum SystemdUnit {
    /// The unit file text: `executable serve serveArguments…`, each word quoted for systemd, restarted on failure,
    /// stopped with SIGTERM (the bridge withdraws its advertisement and closes connections), started at login.
    public static func render(executable: String, serveArguments: [String]) -> String {
        let arguments = (["serve"] + serveArguments).map(quote).joined(separator: " ")
        return """
        [Unit]
        Description=oa-bridge: lets a phone find and drive this desktop's agent
        After=network-online.target avahi-daemon.service
        Wants=network-online.target

        [Service]
        Type=exec
        ExecStart=\(quote(executable)) \(arguments)
        Restart=on-failure
        RestartSec=2
        # SIGTERM withdraws the mDNS advertisement and closes connections with 1001.
        KillSignal=SIGTERM
        TimeoutStopSec=20
        WorkingDirectory=%h
        NoNewPrivileges=yes

        [Install]
        WantedBy=default.target

        """
    }

    /// The executable for `ExecStart=`, from how the program was started (`argument0`, that is, `CommandLine.arguments[0]`):
    /// an absolute path as it is (normalised), a relative one joined to `currentDirectory`, a bare name looked up in
    /// `searchPath` (`$PATH`), else the bare name (systemd looks it up in its own fixed search path).
    public static func executable(argument0: String, currentDirectory: String, searchPath: String?) -> String {
        if argument0.hasPrefix("/") { return URL(fileURLWithPath: argument0).standardizedFileURL.path }
        if argument0.contains("/") {
            return URL(fileURLWithPath: currentDirectory).appendingPathComponent(argument0).standardizedFileURL.path
        }
        for directory in (searchPath ?? "").split(separator: ":") where directory.hasPrefix("/") {
            let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent(argument0).standardizedFileURL.path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return argument0
    }

    /// Where a user unit named `name` goes: `$XDG_CONFIG_HOME/systemd/user/NAME.service` (an absolute
    /// `XDG_CONFIG_HOME`), else `$HOME/.config/systemd/user/NAME.service`.
    public static func userUnitPath(name: String, environment: [String: String]) -> String {
        let config = environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? (environment["HOME"] ?? NSHomeDirectory()) + "/.config"
        return config + "/systemd/user/\(name).service"
    }

    /// systemd's quoting: a word with blanks, quotes, `\`, `$` or `%` (or an empty one) is wrapped in double quotes,
    /// with `\` and `"` escaped by a backslash and `%` and `$` doubled.
    public static func quote(_ word: String) -> String {
        guard word.isEmpty || word.contains(where: { " \t\"\\'$%".contains($0) }) else { return word }
        let escaped = word.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "%", with: "%%").replacingOccurrences(of: "$", with: "$$")
        return "\"\(escaped)\""
    }
}
