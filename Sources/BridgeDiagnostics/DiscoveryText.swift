public import BridgeClient
public import BridgeDiscovery
import Foundation

/// What `oa-bridge discover` prints for people: the table, the `--watch` lines and the advice when nothing is found,
/// for any front end that shows the same.
public enum DiscoveryText {
    /// A one-line summary for `--watch`.
    public static func summary(_ service: ResolvedService, probe: HandshakeProbe.Result?) -> String {
        var parts = [
            "'\(service.instance.name)'",
            "\(service.hostName):\(service.port)",
            "[\(service.addresses.map(\.description).joined(separator: ", "))]",
            "on \(service.interfaces.joined(separator: ","))",
        ]
        if let seconds = service.resolveSeconds { parts.append("resolved in \(milliseconds(seconds))") }
        parts.append(txt(service.txt))
        if let probe { parts.append(probeText(probe)) }
        return parts.joined(separator: "  ")
    }

    /// The one-shot table: a row per service, the handshake column when `probe` is set.
    public static func table(_ found: [ProbedService], probe: Bool) -> String {
        var header = ["NAME", "HOST", "PORT", "ADDRESSES", "INTERFACE", "RESOLVED IN", "TXT"]
        if probe { header.append("HANDSHAKE") }
        var rows = [header]
        for item in found {
            let service = item.service
            var row = [
                service.instance.name + (service.isLocal ? " (this machine)" : ""),
                service.hostName,
                String(service.port),
                service.addresses.map(\.description).joined(separator: ", "),
                service.interfaces.joined(separator: ","),
                service.resolveSeconds.map(milliseconds) ?? "-",
                txt(service.txt),
            ]
            if probe { row.append(item.probe.map(probeText) ?? "-") }
            rows.append(row)
        }
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }

    /// TXT entries as `key=value`, sorted by key.
    public static func txt(_ txt: [String: String]) -> String {
        txt.keys.sorted().map { "\($0)=\(txt[$0] ?? "")" }.joined(separator: " ")
    }

    /// Seconds as whole milliseconds, for example `12 ms`.
    public static func milliseconds(_ seconds: Double) -> String {
        String(format: "%.0f ms", seconds * 1_000)
    }

    /// The probe's best outcome, and per address what worked when there are several.
    public static func probeText(_ probe: HandshakeProbe.Result) -> String {
        let best: String
        if probe.ok {
            let agent = probe.agent?["title"] ?? probe.agent?["name"] ?? "agent"
            best = "ok \(String(format: "%.0f", probe.milliseconds)) ms (\(agent), protocol \(probe.protocolVersion ?? "?"))"
        } else if probe.outcome == .needsPairing {
            best = "needs pairing (the bridge answers; pair with the QR code from 'oa-bridge pair')"
        } else {
            best = "FAILED: \(probe.error ?? "unknown") (\(probe.url))"
        }
        // Per address, what worked: "127.0.0.1 answered 3 ms; fe80::2%eth0 refused 1 ms".
        guard let probes = probe.probes, probes.count > 1 || probe.outcome == .needsPairing else { return best }
        let each = probes.map { "\($0.address) \($0.outcome) \(String(format: "%.0f", $0.ms)) ms" }.joined(separator: "; ")
        return "\(best) [\(each)]"
    }

    /// Why nothing of `type` was found within `seconds`, and what to try; `say` words a `DiscoverStep` (the command
    /// line names its flag; by default `DiscoverStep.words`).
    public static func nothingFound(type: ServiceType, seconds: Double, say: (DiscoverStep) -> String = \.words) -> String {
        let all = say(.allTypes)
        return """
            No \(type) services found within \(String(format: "%.1f", seconds)) s.
            - Is 'oa-bridge serve' running on the desktop? (\(say(.watch)).)
            - Does mDNS work at all here? \(all.prefix(1).uppercased() + all.dropFirst()).
            - Are both devices on the same network? Guest Wi-Fi, VPNs and some firewalls block mDNS \
            (UDP 5353 to 224.0.0.251 / ff02::fb).
            - Without multicast, connect by address instead: ws://HOST:9099/ or the desktop's Tailscale name.
            """
    }

    /// How to get the mDNS daemon going.
    public static let daemonHint = """
        Start the daemon with 'sudo systemctl start avahi-daemon' (Debian: 'sudo apt-get install avahi-daemon'); \
        it needs the D-Bus system bus ('sudo systemctl start dbus'). In a container without systemd: \
        'dbus-daemon --system && avahi-daemon -D'.
        """
}
