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

    /// systemd's quoting: a word with blanks, quotes, `\`, `$` or `%` (or an empty one) is wrapped in double quotes,
    /// with `\` and `"` escaped by a backslash and `%` and `$` doubled.
    public static func quote(_ word: String) -> String {
        guard word.isEmpty || word.contains(where: { " \t\"\\'$%".contains($0) }) else { return word }
        let escaped = word.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "%", with: "%%").replacingOccurrences(of: "$", with: "$$")
        return "\"\(escaped)\""
    }
}
