public import Foundation

/// The process that listens on a TCP port, as far as this process can see it: read from `/proc` on Linux
/// (`/proc/net/tcp{,6}` for the listening socket's inode, then the `/proc/PID/fd` links that name it).
///
/// Another user's process is found only with the privileges to read its descriptors; elsewhere nothing is found.
public struct PortHolder: Sendable, Hashable, CustomStringConvertible {
    /// The process id.
    public var pid: Int32
    /// The command line, arguments joined by spaces (the short command name when the command line is unreadable).
    public var command: String
    /// The systemd unit the process runs in (`oa-bridge.service`), from its cgroup; `nil` when not under a unit.
    public var systemdUnit: String?

    /// Creates a description of a holder.
    public init(pid: Int32, command: String, systemdUnit: String? = nil) {
        self.pid = pid
        self.command = command
        self.systemdUnit = systemdUnit
    }

    /// "oa-bridge serve (pid 123, systemd unit oa-bridge.service)".
    public var description: String {
        "\(command) (pid \(pid)\(systemdUnit.map { ", systemd unit \($0)" } ?? ""))"
    }

    /// Whether the holder is an `oa-bridge` (its command's program name), so the message can say another bridge runs.
    public var isBridge: Bool {
        let program = command.split(separator: " ", maxSplits: 1).first.map(String.init) ?? command
        return (program as NSString).lastPathComponent == "oa-bridge"
    }

    /// The process listening on TCP `port` (any address), or `nil` when none can be seen.
    public static func listening(on port: Int, proc: URL = URL(fileURLWithPath: "/proc")) -> PortHolder? {
        let inodes = listeningInodes(port: port, proc: proc)
        guard !inodes.isEmpty else { return nil }
        let fileManager = FileManager.default
        guard let pids = try? fileManager.contentsOfDirectory(atPath: proc.path) else { return nil }
        for pidText in pids {
            guard let pid = Int32(pidText) else { continue }
            let fdDirectory = proc.appendingPathComponent("\(pid)/fd")
            guard let fds = try? fileManager.contentsOfDirectory(atPath: fdDirectory.path) else { continue }
            for fd in fds {
                guard let target = try? fileManager.destinationOfSymbolicLink(atPath: fdDirectory.appendingPathComponent(fd).path),
                      target.hasPrefix("socket:["), let inode = UInt64(target.dropFirst(8).dropLast()),
                      inodes.contains(inode)
                else { continue }
                return PortHolder(pid: pid, command: command(pid: pid, proc: proc), systemdUnit: unit(pid: pid, proc: proc))
            }
        }
        return nil
    }

    /// Inodes of the sockets in state LISTEN (`0A`) on `port`, from `/proc/net/tcp` and `/proc/net/tcp6`.
    static func listeningInodes(port: Int, proc: URL) -> Set<UInt64> {
        var inodes: Set<UInt64> = []
        let portHex = String(format: ":%04X", port)
        for table in ["net/tcp", "net/tcp6"] {
            guard let text = try? String(contentsOf: proc.appendingPathComponent(table), encoding: .utf8) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                guard fields.count > 9, fields[1].hasSuffix(portHex), fields[3] == "0A", let inode = UInt64(fields[9]), inode != 0
                else { continue }
                inodes.insert(inode)
            }
        }
        return inodes
    }

    private static func command(pid: Int32, proc: URL) -> String {
        if let data = try? Data(contentsOf: proc.appendingPathComponent("\(pid)/cmdline")), !data.isEmpty {
            let words = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            if !words.isEmpty { return printable(words.joined(separator: " ")) }
        }
        let comm = (try? String(contentsOf: proc.appendingPathComponent("\(pid)/comm"), encoding: .utf8)) ?? "?"
        return printable(comm.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// One line of at most 120 characters: a command line can hold newlines (`python3 -c 'script'`) and any bytes.
    private static func printable(_ text: String) -> String {
        let words = text.split(whereSeparator: { $0.isWhitespace || $0.unicodeScalars.contains { CharacterSet.controlCharacters.contains($0) } })
        let line = words.joined(separator: " ")
        return line.count > 120 ? String(line.prefix(119)) + "…" : line
    }

    /// The `.service` unit in the process's cgroup path (`0::/system.slice/oa-bridge.service`), if any.
    private static func unit(pid: Int32, proc: URL) -> String? {
        guard let text = try? String(contentsOf: proc.appendingPathComponent("\(pid)/cgroup"), encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") {
            guard let path = line.split(separator: ":", maxSplits: 2).last else { continue }
            // A user's session manager (user@1000.service) holds everything started from a desktop: not worth naming.
            if let unit = path.split(separator: "/").last(where: { $0.hasSuffix(".service") && !$0.hasPrefix("user@") }) {
                return String(unit)
            }
        }
        return nil
    }
}
