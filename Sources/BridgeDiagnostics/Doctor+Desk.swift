import BridgeDiscovery
import BridgeProcess
import Foundation
import NIOPosix

extension Doctor {
    /// The bridge port tried from this machine's own LAN addresses, as a phone's packets would arrive: a loopback that
    /// answers says nothing about a filter on the LAN side.
    ///
    /// Only when the port answers on loopback (otherwise the port row already says the bridge is not running). A rule
    /// found by ``packetFilter(port:)`` is named with its fix.
    func lanReachability(interfaces: [NetworkFindings.InterfaceState], rules: PacketFilterReading) async -> DoctorCheck? {
        let loopback = await NetworkFindings.connect(to: ServiceAddress(ip: "127.0.0.1", family: .ipv4), port: UInt16(options.port), timeout: options.reachTimeout)
        let loopback6 = loopback == .answered ? loopback
            : await NetworkFindings.connect(to: ServiceAddress(ip: "::1", family: .ipv6), port: UInt16(options.port), timeout: options.reachTimeout)
        guard loopback == .answered || loopback6 == .answered else { return nil }
        let name = "reach from the LAN"
        let addresses = Doctor.lanAddresses(interfaces)
        guard !addresses.isEmpty else {
            return DoctorCheck(name: name, status: .warn, detail: "this machine has no LAN address (no interface is up with an address besides loopback)",
                               fix: "connect the desktop to the phone's network")
        }
        let timeout = options.reachTimeout
        let port = options.port
        let outcomes = await withTaskGroup(of: (Int, ServiceAddress, NetworkFindings.TCPOutcome).self) { group in
            for (index, address) in addresses.enumerated() {
                group.addTask { (index, address, await NetworkFindings.connect(to: address, port: UInt16(port), timeout: timeout)) }
            }
            var all: [(Int, ServiceAddress, NetworkFindings.TCPOutcome)] = []
            for await outcome in group { all.append(outcome) }
            return all.sorted { $0.0 < $1.0 }.map { ($0.1, $0.2) }
        }
        let failed = outcomes.filter { $0.1 != .answered }
        let shown = { (list: [(ServiceAddress, NetworkFindings.TCPOutcome)]) in
            list.map { "\($0.0.urlHost):\(port) \(DoctorAdvice.words($0.1))" }.joined(separator: "; ")
        }
        let dropping = rules.findings.filter { !$0.isPolicy }
        if failed.isEmpty {
            if let rule = dropping.first {
                return DoctorCheck(
                    name: name, status: .fail,
                    detail: "port \(port) answers on this machine's LAN addresses from here, but a phone's packets arrive on the interface, where \(rule.summary) drops them",
                    fix: rule.fix)
            }
            // Packets to this machine's own address come in on loopback: a rule on the LAN interface shows only in the rules.
            let unread = rules.readable ? "" : "; a rule on the network interface itself shows only in the rules, which "
                + (rules.unreadableReason.map { "are not read: \($0)" } ?? "no tool here could read")
            return DoctorCheck(name: name, status: .ok,
                               detail: "port \(port) answers on \(outcomes.map { "\($0.0.urlHost):\(port)" }.joined(separator: ", ")) as well as on loopback\(unread)")
        }
        let cause: String
        let fix: String
        var setting: DoctorSetting?
        if let rule = rules.findings.first {
            cause = "the firewall \(rule.verdict)s it: \(rule.summary)"
            fix = rule.fix
        } else if failed.contains(where: { $0.1 == .timeout }) {
            cause = rules.readable
                ? "a packet filter drops it (no nftables or iptables rule names the port: check the ufw or firewalld rows, or a filter on the interface)"
                : "a firewall drops it; \(rules.unreadableReason ?? "the rules could not be read")"
            fix = "find the rule with 'sudo oa-bridge doctor' (which reads nftables and iptables), or allow the port: 'sudo ufw allow \(port)/tcp'"
        } else {
            cause = "the bridge listens on some addresses only"
            fix = "serve on every address (the default), or remove 'host' from the config file"
            setting = .host
        }
        return DoctorCheck(name: name, status: .fail,
                           detail: "port \(port) answers on loopback but not from the LAN address: \(shown(failed)); \(cause). Phones cannot connect",
                           fix: fix, setting: setting)
    }

    /// The addresses a phone on the LAN would use: IPv4 and global IPv6 of every interface that is up (at most 6).
    static func lanAddresses(_ interfaces: [NetworkFindings.InterfaceState]) -> [ServiceAddress] {
        var addresses: [ServiceAddress] = []
        for interface in interfaces {
            for text in interface.addresses {
                let ip = text.split(separator: "%").first.map(String.init) ?? text
                let address = ServiceAddress(ip: ip, family: ip.contains(":") ? .ipv6 : .ipv4)
                guard !address.isLinkLocal, !NetworkFindings.isLoopback(ip), !addresses.contains(address) else { continue }
                addresses.append(address)
            }
        }
        return Array(addresses.prefix(6))
    }

    /// What the packet filter rules say about the port, and whether they could be read.
    struct PacketFilterReading: Sendable {
        /// Rules (and policies) that drop or reject the port.
        var findings: [FirewallRules.Finding] = []
        /// Which tools were read.
        var read: [String] = []
        /// Whether any tool's rules could be read.
        var readable: Bool { !read.isEmpty }
        /// Why they could not, in words.
        var unreadableReason: String?
    }

    /// Reads nftables (and iptables when its rules are not nftables', that is, iptables-legacy or no `nft`) for rules that
    /// drop or reject the bridge port.
    ///
    /// Reading needs CAP_NET_ADMIN: without it, says so.
    func packetFilter() async -> PacketFilterReading {
        var reading = PacketFilterReading()
        var denied = false
        if let nft = Doctor.tool("nft") {
            let json = await Doctor.runWithStatus(nft, ["-j", "list", "ruleset"])
            if json.status == 0 {
                let listing = await Doctor.runWithStatus(nft, ["-a", "list", "ruleset"])
                reading.findings += FirewallRules.nftables(json: json.output, listing: listing.output, port: options.port)
                reading.read.append("nftables")
            } else if json.output.lowercased().contains("not permitted") {
                denied = true
            }
        }
        if let iptables = Doctor.tool("iptables") {
            let version = await Doctor.runWithStatus(iptables, ["-V"])
            // iptables-nft's rules are nftables rules: read once, through nft, unless nft could not be.
            if !version.output.contains("nf_tables") || !reading.read.contains("nftables") {
                for (command, source) in [(iptables, "iptables"), (Doctor.tool("ip6tables"), "ip6tables")] {
                    guard let command else { continue }
                    let rules = await Doctor.runWithStatus(command, ["-S"])
                    if rules.status == 0 {
                        reading.findings += FirewallRules.iptables(rules.output, source: source, port: options.port)
                        reading.read.append(source)
                    } else if rules.output.lowercased().contains("permission denied") || rules.output.lowercased().contains("not permitted") {
                        denied = true
                    }
                }
            }
        }
        if !reading.readable, denied {
            reading.unreadableReason = "the nftables/iptables rules can be read by root only: 'sudo oa-bridge doctor' names the rule"
        }
        return reading
    }

    /// The packet filter row: rules that drop the port named with their fix; otherwise what was read.
    func packetFilterCheck(_ reading: PacketFilterReading) -> DoctorCheck? {
        let name = "packet filter"
        if !reading.findings.isEmpty {
            let rules = reading.findings.filter { !$0.isPolicy }
            let status: DoctorCheck.Status = rules.isEmpty ? .warn : .fail
            return DoctorCheck(
                name: name, status: status,
                detail: "\(reading.findings.map(\.summary).joined(separator: "; ")): new connections to port \(options.port) from the network are "
                    + (rules.isEmpty ? "probably dropped" : "dropped"),
                fix: (rules.first ?? reading.findings[0]).fix)
        }
        if reading.readable {
            return DoctorCheck(name: name, status: .ok, detail: "\(reading.read.joined(separator: ", ")): no rule drops tcp port \(options.port)")
        }
        if let reason = reading.unreadableReason {
            return DoctorCheck(name: name, status: .ok, detail: "not read: \(reason) (the LAN address row tried the port meanwhile)")
        }
        return nil
    }

    /// A tool on `PATH` or in the sbin directories, which a user's `PATH` often lacks.
    static func tool(_ name: String) -> String? {
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin"] {
            let path = directory + "/" + name
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    /// Runs a command briefly (a ``ChildProcess``) and returns its exit status (128 + the signal if one ended it) and
    /// output (stdout and stderr); -1 and no output when it cannot start.
    static func runWithStatus(_ executable: String, _ arguments: [String]) async -> (status: Int32, output: String) {
        guard let completed = try? await ChildProcess.run(executable, arguments, withErrors: true) else { return (-1, "") }
        switch completed.exit {
        case .exited(let code): return (code, completed.text)
        case .signaled(let signal): return (128 + signal, completed.text)
        }
    }
}
