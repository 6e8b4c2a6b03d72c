import BridgeClient
public import BridgeDiscovery
import BridgePairing
import BridgeProcess
import BridgeTLS
public import BridgeTailscale
public import BridgeTime
public import Foundation
public import Logging
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The checks behind `oa-bridge doctor`: everything that must hold for a phone to find and reach
/// this desktop, each with the fix when it does not.
public struct Doctor: Sendable {
    /// What to check against.
    public struct Options: Sendable {
        /// The bridge port to look for.
        public var port: Int = BridgeEndpoint.defaultPort
        /// The mDNS backend to test.
        public var backend: any DiscoveryBackend
        /// How long to browse for our own service.
        public var browseTime: Duration = .seconds(2)
        /// The state directory holding the token store.
        public var stateDirectory: URL
        /// How to read the tailnet identity.
        public var tailscale: TailscaleStatusReader = TailscaleStatusReader()
        /// Where the D-Bus system bus socket is expected.
        public var systemBusSocket: String = "/run/dbus/system_bus_socket"
        /// Whether to publish a short-lived test service and browse for it (the self-check).
        public var selfCheck = true
        /// How long the self-check waits to see its own test service.
        public var selfCheckTime: Duration = .seconds(4)
        /// How long a TCP attempt to a discovered bridge may take.
        public var reachTimeout: Duration = .milliseconds(1500)
        /// At most this many discovered bridges are tried for reachability.
        public var reachLimit = 8
        /// The role to check for; `nil` decides from what is on this machine (``DoctorRole/decide(_:)``).
        public var role: DoctorRole?
        /// The `serve` config file's path, when one exists (evidence that a bridge is set up here).
        public var configFile: String?
        /// The systemd unit `install-service` wrote, when one exists (evidence that a bridge is installed here).
        public var serviceUnit: String?
        /// The clock the checks read: the browse's deadline, and the time the clock check judges.
        public var clock: any BridgeClock = ContinuousClock()

        /// Creates options.
        public init(backend: any DiscoveryBackend, stateDirectory: URL) {
            self.backend = backend
            self.stateDirectory = stateDirectory
        }
    }

    let options: Options
    let logger: Logger

    /// Creates a doctor.
    public init(options: Options, logger: Logger) {
        self.options = options
        self.logger = logger
    }

    /// Runs every check for this machine's role, in the order a person would debug; the first row says the role and why.
    public func run() async -> [DoctorCheck] {
        await runReporting().checks
    }

    /// Runs every check for this machine's role (``Options/role``, else decided from what is here) and returns the role
    /// with the checks: the desk's (its bridge, its port from loopback and from the LAN address, the packet filter,
    /// the token store) or a client's (the bridges it can find, reach, and is paired with), never the other's.
    public func runReporting() async -> (role: DoctorRole, checks: [DoctorCheck]) {
        let local = await ProbeLocalBridge(port: options.port).check()
        let (role, roleRow) = decideRole(bridgeAnswers: local.running)
        var checks: [DoctorCheck] = [roleRow]
        checks.append(systemBus())
        let (daemonChecks, services) = await mdns(role: role)
        checks.append(contentsOf: daemonChecks)
        if options.selfCheck { checks.append(await selfCheck()) }
        let interfaces = NetworkFindings.upInterfaces()
        checks.append(contentsOf: multicastInterfaces(interfaces))
        checks.append(contentsOf: ipv6(interfaces))
        switch role {
        case .desk:
            checks.append(contentsOf: await bridgePort(local))
            if let listening = listening() { checks.append(listening) }
            let rules = await packetFilter()
            if let lan = await lanReachability(interfaces: interfaces, rules: rules) { checks.append(lan) }
            checks.append(contentsOf: await reachability(services.filter { !$0.isLocal }))
            checks.append(contentsOf: await firewall())
            if let filter = packetFilterCheck(rules) { checks.append(filter) }
            checks.append(await tailscale())
            checks.append(tokenStore())
        case .client:
            let saved = SavedBridges(directory: options.stateDirectory.appendingPathComponent("client"))
            let bridges: [SavedBridges.Bridge]
            do {
                bridges = try saved.load()
            } catch {
                bridges = []
                checks.append(DoctorCheck(name: "saved bridges", status: .warn,
                                          detail: "\(saved.directory.path)/bridges.json cannot be read: \(error)",
                                          fix: "move it aside (mv bridges.json bridges.json.bad) and pair again"))
            }
            let discovered = services.filter { !$0.isLocal }
            if let mdnsRow = daemonChecks.first, mdnsRow.status == .ok {
                checks.append(bridgesOnNetwork(discovered, saved: bridges))
            }
            checks.append(contentsOf: await reachability(discovered))
            checks.append(contentsOf: await savedBridgeChecks(saved, bridges: bridges, discovered: discovered))
            checks.append(await tailscale())
        }
        checks.append(clock())
        return (role, checks)
    }

    /// The role and its row: forced by ``Options/role``, else decided from what is on this machine.
    func decideRole(bridgeAnswers: Bool) -> (DoctorRole, DoctorCheck) {
        let evidence = DoctorRole.Evidence.read(
            port: options.port, stateDirectory: options.stateDirectory, configFile: options.configFile,
            serviceUnit: options.serviceUnit, bridgeAnswers: bridgeAnswers)
        let decided = DoctorRole.decide(evidence)
        if let forced = options.role {
            return (forced, DoctorCheck(name: "role", status: .ok, detail: "\(forced.rawValue) (as asked)"))
        }
        switch decided.role {
        case .desk:
            return (.desk, DoctorCheck(name: "role", status: .ok,
                                       detail: "desk: \(decided.reasons.joined(separator: "; ")). Checking what phones need to find and reach this bridge"))
        case .client:
            return (.client, DoctorCheck(name: "role", status: .ok,
                                         detail: "client: no bridge runs or is set up on this machine. Checking that this device can find, reach and use a bridge elsewhere (doctor's desk role checks this machine as a desk)",
                                         setting: .role))
        }
    }

    func systemBus() -> DoctorCheck {
        if let address = ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"], !address.isEmpty {
            return DoctorCheck(name: "D-Bus system bus", status: .ok, detail: "DBUS_SYSTEM_BUS_ADDRESS=\(address)")
        }
        if FileManager.default.fileExists(atPath: options.systemBusSocket) {
            return DoctorCheck(name: "D-Bus system bus", status: .ok, detail: options.systemBusSocket)
        }
        return DoctorCheck(name: "D-Bus system bus", status: .fail, detail: "no socket at \(options.systemBusSocket)",
                           fix: "start it: 'sudo systemctl start dbus' (in a container: 'dbus-daemon --system')")
    }

    /// Browses our service type: tells whether the daemon answers and whether we see ourselves; returns the
    /// services seen too, for the reachability rows.
    func mdns(role: DoctorRole = .desk) async -> ([DoctorCheck], [ResolvedService]) {
        let events = options.backend.browse(.openAgents, domain: nil)
        var unavailable: String?
        var services: [ResolvedService] = []
        let clock = options.clock
        let deadline = clock.now + options.browseTime
        await withTaskGroup(of: Void.self) { group in
            let collector = Collector()
            group.addTask {
                for await event in events {
                    await collector.add(event)
                }
            }
            while clock.now < deadline {
                try? await clock.sleep(for: .milliseconds(100))
                if await collector.isUnavailable { break }
            }
            group.cancelAll()
            unavailable = await collector.unavailable
            services = await collector.services
        }
        let daemon: DoctorCheck
        if let unavailable {
            daemon = DoctorCheck(name: "avahi-daemon", status: .fail, detail: unavailable,
                                 fix: "start it: 'sudo systemctl start avahi-daemon' (install: 'sudo apt-get install avahi-daemon')")
            let browse = role == .desk ? "our service visible" : "bridges on the network"
            return ([daemon, DoctorCheck(name: browse, status: .fail, detail: "cannot browse without the daemon")], [])
        }
        daemon = DoctorCheck(name: "avahi-daemon", status: .ok, detail: "answering over D-Bus (\(options.backend.name) backend)")
        guard role == .desk else { return ([daemon], services) }
        let ours = services.filter(\.isLocal)
        let visible: DoctorCheck
        if let own = ours.first {
            visible = DoctorCheck(name: "our service visible", status: .ok,
                                  detail: "'\(own.instance.name)' on port \(own.port) via \(own.interfaces.joined(separator: ",")); \(services.count) bridge(s) on the network")
        } else if await ProbeLocalBridge(port: options.port, timeout: .seconds(1)).check().running {
            visible = DoctorCheck(name: "our service visible", status: .warn,
                                  detail: "the bridge runs, but no _openagents._tcp service from this machine was seen (\(services.count) from others)",
                                  fix: "check that 'serve' runs with discovery on and announces on this network's interface; its log says why announcing failed",
                                  setting: .discovery)
        } else {
            visible = DoctorCheck(name: "our service visible", status: .warn,
                                  detail: "no _openagents._tcp service from this machine (\(services.count) from others)",
                                  fix: "start the bridge: 'oa-bridge serve'")
        }
        return ([daemon, visible], services)
    }

    /// Interfaces that are up: at least one must multicast, and every one without the MULTICAST flag is named
    /// with the command that turns it on.
    func multicastInterfaces(_ interfaces: [NetworkFindings.InterfaceState]) -> [DoctorCheck] {
        var checks: [DoctorCheck] = []
        let capable = interfaces.filter(\.multicast)
        if capable.isEmpty {
            checks.append(DoctorCheck(name: "multicast interfaces", status: .fail, detail: "no interface is up with multicast (besides loopback)",
                                      fix: interfaces.first.map { "sudo ip link set dev \($0.name) multicast on" }
                                          ?? "connect to a network; enable multicast with 'sudo ip link set dev IFACE multicast on'"))
        } else {
            checks.append(DoctorCheck(name: "multicast interfaces", status: .ok,
                                      detail: capable.map { "\($0.name) \($0.addresses.joined(separator: " "))" }.joined(separator: "; ")))
        }
        for interface in interfaces where !interface.multicast {
            checks.append(DoctorCheck(
                name: "multicast \(interface.name)", status: .warn,
                detail: "\(interface.name) is up without the MULTICAST flag: mDNS can neither announce the bridge nor find anything on it",
                fix: "sudo ip link set dev \(interface.name) multicast on"))
        }
        return checks
    }

    /// IPv6 switched off for the machine or an interface: avahi still announces IPv4, but IPv6-only phones and
    /// networks cannot reach the bridge.
    func ipv6(_ interfaces: [NetworkFindings.InterfaceState]) -> [DoctorCheck] {
        guard let off = NetworkFindings.ipv6Disabled(interfaces: interfaces.map(\.name)) else { return [] }
        guard !off.isEmpty else {
            return [DoctorCheck(name: "IPv6", status: .ok, detail: "enabled\(interfaces.isEmpty ? "" : " on " + interfaces.map(\.name).joined(separator: ", "))")]
        }
        let fix = off.map { "sudo sysctl -w net.ipv6.conf.\($0).disable_ipv6=0" }.joined(separator: " && ")
            + " (and remove the setting from /etc/sysctl.conf or /etc/sysctl.d to keep it)"
        return [DoctorCheck(name: "IPv6", status: .warn,
                            detail: "IPv6 is disabled on \(off.joined(separator: ", ")): phones on IPv6-only networks cannot reach the bridge, and the bridge cannot listen on '::'",
                            fix: fix)]
    }

    /// The sockets listening on the bridge port: only loopback means no phone can connect.
    func listening() -> DoctorCheck? {
        guard let addresses = NetworkFindings.listeners(port: options.port, tcp: NetworkFindings.readFile("/proc/net/tcp"),
                                                        tcp6: NetworkFindings.readFile("/proc/net/tcp6")),
              !addresses.isEmpty else { return nil }
        let shown = addresses.map { $0.contains(":") ? "[\($0)]:\(options.port)" : "\($0):\(options.port)" }.joined(separator: ", ")
        if addresses.allSatisfy(NetworkFindings.isLoopback) {
            return DoctorCheck(name: "listening addresses", status: .warn,
                               detail: "port \(options.port) listens on \(shown) only: this machine can connect, phones on the network cannot",
                               fix: "serve on every address (the default), or remove 'host' from the config file", setting: .host)
        }
        return DoctorCheck(name: "listening addresses", status: .ok, detail: "port \(options.port) listens on \(shown)")
    }

    /// Bridges that mDNS shows but that may not answer: each is tried over TCP on its addresses; when none answers,
    /// the ARP/NDP neighbour table says whether the address is on this link at all (an address from another
    /// network, as a router's mDNS reflector passes on, has no neighbour).
    func reachability(_ services: [ResolvedService]) async -> [DoctorCheck] {
        let tried = Array(services.sorted { $0.instance.name < $1.instance.name }.prefix(options.reachLimit))
        let timeout = options.reachTimeout
        return await withTaskGroup(of: (Int, DoctorCheck).self) { group in
            for (index, service) in tried.enumerated() {
                group.addTask { (index, await Doctor.reach(service, timeout: timeout)) }
            }
            var rows: [(Int, DoctorCheck)] = []
            for await row in group { rows.append(row) }
            return rows.sorted { $0.0 < $1.0 }.map(\.1)
        }
    }

    static func reach(_ service: ResolvedService, timeout: Duration) async -> DoctorCheck {
        let name = "reach \(service.instance.name)"
        guard !service.addresses.isEmpty else {
            return DoctorCheck(name: name, status: .warn, detail: "\(service.hostName) was announced without an address",
                               fix: "check the network of \(service.hostName): its avahi-daemon announces no address on the interface this machine shares with it")
        }
        var outcomes: [(ServiceAddress, NetworkFindings.TCPOutcome)] = []
        for address in service.addresses.prefix(4) {
            let outcome = await NetworkFindings.connect(to: address, port: service.port, timeout: timeout)
            if outcome == .answered {
                return DoctorCheck(name: name, status: .ok, detail: "\(address.urlHost):\(service.port) answers TCP (\(service.hostName))")
            }
            outcomes.append((address, outcome))
        }
        let neighbours = await Doctor.neighbourTable()
        var parts: [String] = []
        var unlinked: [String] = []
        for (address, outcome) in outcomes {
            var part = "\(address.urlHost):\(service.port) \(DoctorAdvice.words(outcome))"
            if outcome != .refused, let neighbours {
                let state = NetworkFindings.neighbourState(of: address.ip, in: neighbours)
                if !NetworkFindings.neighbourAnswered(state) {
                    part += " (no \(address.family == .ipv4 ? "ARP" : "NDP") neighbour\(state.map { ": \($0)" } ?? ""))"
                    unlinked.append(address.ip)
                }
            }
            parts.append(part)
        }
        if !unlinked.isEmpty, unlinked.count == outcomes.filter({ $0.1 != .refused }).count, !outcomes.contains(where: { $0.1 == .refused }) {
            return DoctorCheck(
                name: name, status: .warn,
                detail: "'\(service.instance.name)' is announced over mDNS but unreachable: \(parts.joined(separator: "; ")). No neighbour answers for its addresses, so they are not on this link: the announcement was probably reflected from another network (a router's mDNS reflector or repeater)",
                fix: "connect the phone and the desktop to the same network, or route between the networks and connect by address ('oa-bridge connect HOST:\(service.port)'), or use the Tailscale name; turning the reflector off stops the misleading announcements")
        }
        // The advice follows how the attempts failed: a refusal says the host is there and nothing listens, a timeout
        // that something dropped the packets (a firewall, most often).
        let outcome = outcomes.map(\.1).min { Doctor.likelihood($0) < Doctor.likelihood($1) } ?? .error
        return DoctorCheck(
            name: name, status: .warn,
            detail: "'\(service.instance.name)' is announced over mDNS but does not answer TCP: \(parts.joined(separator: "; "))",
            fix: DoctorAdvice.numbered(DoctorAdvice.unanswered(outcome, host: service.hostName, port: Int(service.port))))
    }

    /// `ip neigh show` (IPv4 and IPv6), or `nil` where `ip` is missing.
    static func neighbourTable() async -> String? {
        guard let ip = TailscaleStatusReader.find("ip") ?? ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip"].first(where: FileManager.default.isExecutableFile(atPath:)) else { return nil }
        return await Doctor.run(ip, ["neigh", "show"])
    }

    /// Publishes a short-lived test service through the daemon and browses for it on this host: proves the daemon
    /// takes registrations and answers browses, without waiting for a bridge to run.
    func selfCheck() async -> DoctorCheck {
        let name = "self-check"
        let instance = "oa-bridge doctor \(getpid())"
        let type: ServiceType
        let registration: ServiceRegistration
        do {
            type = try ServiceType(Doctor.selfCheckType)
            registration = try ServiceRegistration(name: instance, type: type, port: 9, txt: try TXTRecord(["check": "1"]))
        } catch {
            return DoctorCheck(name: name, status: .fail, detail: error.description)
        }
        let clock = options.clock
        let start = clock.now
        let advertisement = options.backend.advertise(registration)
        let browse = options.backend.browse(type, domain: nil)
        let outcome = await withTaskGroup(of: SelfCheckOutcome?.self) { group in
            group.addTask {
                for await event in advertisement.events {
                    switch event {
                    case .daemonUnavailable(let reason): return .advertiseFailed(reason)
                    case .failure(let error): return .advertiseFailed(error.description)
                    case .registered, .collision: continue
                    }
                }
                return nil
            }
            group.addTask {
                for await event in browse {
                    switch event {
                    case .added(let service) where service.instance.name == instance:
                        return .seen(clock.now - start, service.interfaces)
                    case .daemonUnavailable(let reason): return .advertiseFailed(reason)
                    default: continue
                    }
                }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: self.options.selfCheckTime)
                return .notSeen
            }
            var result: SelfCheckOutcome = .notSeen
            while let next = await group.next() {
                if let next {
                    result = next
                    break
                }
            }
            group.cancelAll()
            return result
        }
        await advertisement.withdraw()
        switch outcome {
        case .seen(let elapsed, let interfaces):
            return DoctorCheck(name: name, status: .ok,
                               detail: String(format: "published '%@' (%@) through the daemon and browsed it back in %.0f ms%@", instance, Doctor.selfCheckType,
                                              elapsed.inMilliseconds, interfaces.isEmpty ? "" : " on " + interfaces.joined(separator: ",")))
        case .advertiseFailed(let reason):
            return DoctorCheck(name: name, status: .fail, detail: "the daemon did not take a test service: \(reason)",
                               fix: "start or restart it: 'sudo systemctl restart avahi-daemon' (it needs D-Bus: 'sudo systemctl start dbus')")
        case .notSeen:
            return DoctorCheck(name: name, status: .fail,
                               detail: "published a test service through the daemon but did not browse it back within \(String(format: "%.0f", options.selfCheckTime.inSeconds)) s",
                               fix: "the daemon uses no interface: check allow-interfaces / deny-interfaces in /etc/avahi/avahi-daemon.conf and that an interface is up with multicast, then 'sudo systemctl restart avahi-daemon'")
        }
    }

    /// The type of the self-check's test service (not `_openagents._tcp`, so phones never list it).
    public static let selfCheckType = "_oabridge-check._tcp"

    private enum SelfCheckOutcome: Sendable {
        case seen(Duration, [String])
        case advertiseFailed(String)
        case notSeen
    }

    /// The bridge on this machine, asked without a token over loopback (`/api/health`, then `/api/status` for the
    /// auth mode): a bridge that wants pairing is running, not "nothing answers".
    func bridgePort(_ finding: ProbeLocalBridge.Finding) async -> [DoctorCheck] {
        let name = "port \(options.port)"
        guard finding.running else {
            // How the port failed, in words (the HTTP client's own error codes mean nothing to a user).
            let tcp = await NetworkFindings.connect(to: ServiceAddress(ip: "127.0.0.1", family: .ipv4), port: UInt16(options.port), timeout: options.reachTimeout)
            switch tcp {
            case .answered:
                return [DoctorCheck(name: name, status: .warn, detail: "127.0.0.1:\(options.port) takes connections but does not answer /api/health as a bridge does",
                                    fix: "another program holds port \(options.port) (see 'ss -ltnp'): stop it, or serve the bridge on another port",
                                    setting: .port)]
            case .timeout:
                return [DoctorCheck(name: name, status: .warn, detail: "127.0.0.1:\(options.port) \(DoctorAdvice.words(tcp))",
                                    fix: DoctorAdvice.numbered(["a firewall rule drops port \(options.port) even on loopback: see the packet filter row",
                                                                "the bridge is stuck: restart it ('systemctl --user restart oa-bridge', or stop and start 'oa-bridge serve')"]))]
            default:
                return [DoctorCheck(name: name, status: .warn, detail: "nothing answers on 127.0.0.1:\(options.port): the bridge is not running (or uses another port)",
                                    fix: "start the bridge: 'oa-bridge serve' (on its port, if it uses another)", setting: .port)]
            }
        }
        let answered = String(format: "the bridge answers on %@ in %.0f ms", finding.url, finding.ms)
        switch finding.auth {
        case .token?:
            return [DoctorCheck(name: name, status: .ok, detail: "\(answered); auth: token (phones pair with the QR code from 'oa-bridge pair')")]
        case .none?:
            return [DoctorCheck(name: name, status: .ok, detail: "\(answered); auth: none (only loopback and peers in the networks of its allow-network setting may connect)")]
        case nil:
            return [DoctorCheck(name: name, status: .ok, detail: "\(answered); its auth mode is unknown (/api/status did not say)")]
        }
    }

    func firewall() async -> [DoctorCheck] {
        var checks: [DoctorCheck] = []
        if let ufw = TailscaleStatusReader.find("ufw") {
            let output = await Doctor.run(ufw, ["status"])
            if output.contains("Status: active") {
                let openMDNS = output.contains("5353")
                let openPort = output.contains(String(options.port))
                let status: DoctorCheck.Status = openMDNS && openPort ? .ok : .warn
                checks.append(DoctorCheck(name: "firewall (ufw)", status: status,
                                          detail: "active; mDNS \(openMDNS ? "allowed" : "not listed"), port \(options.port) \(openPort ? "allowed" : "not listed")",
                                          fix: status == .ok ? nil : "sudo ufw allow 5353/udp && sudo ufw allow \(options.port)/tcp"))
            }
        }
        if let firewallCmd = TailscaleStatusReader.find("firewall-cmd"), await Doctor.run(firewallCmd, ["--state"]).contains("running") {
            let services = await Doctor.run(firewallCmd, ["--list-all"])
            let ok = services.contains("mdns") && services.contains("\(options.port)/tcp")
            checks.append(DoctorCheck(name: "firewall (firewalld)", status: ok ? .ok : .warn, detail: "running",
                                      fix: ok ? nil : "sudo firewall-cmd --add-service=mdns --add-port=\(options.port)/tcp --permanent && sudo firewall-cmd --reload"))
        }
        if checks.isEmpty {
            checks.append(DoctorCheck(name: "firewall", status: .ok, detail: "no ufw or firewalld active (nftables and iptables rules: the packet filter row; the router's client isolation is not visible from here)"))
        }
        return checks
    }

    func tailscale() async -> DoctorCheck {
        do {
            let identity = try await options.tailscale.read()
            if identity.isRunning {
                return DoctorCheck(name: "Tailscale", status: .ok, detail: "\(identity.dnsName) \(identity.addresses.joined(separator: " ")) (fallback when mDNS fails)")
            }
            return DoctorCheck(name: "Tailscale", status: .warn, detail: "installed but \(identity.backendState)", fix: "sudo tailscale up")
        } catch .notInstalled {
            return DoctorCheck(name: "Tailscale", status: .ok, detail: "not installed (optional: it gives phones a way in when multicast is blocked)")
        } catch {
            return DoctorCheck(name: "Tailscale", status: .warn, detail: error.description, fix: "sudo systemctl start tailscaled")
        }
    }

    func tokenStore() -> DoctorCheck {
        let file = options.stateDirectory.appendingPathComponent(TokenStore.databaseFileName).path
        var info = stat()
        guard stat(file, &info) == 0 else {
            return DoctorCheck(name: "token store", status: .ok, detail: "\(file) does not exist yet (created by the first 'oa-bridge serve')")
        }
        let mode = info.st_mode & 0o777
        guard access(file, R_OK | W_OK) == 0 else {
            return DoctorCheck(name: "token store", status: .fail, detail: "\(file) is not readable and writable by this user",
                               fix: "run as the user that runs 'oa-bridge serve', or fix the owner: 'sudo chown $USER \(file)'")
        }
        if mode & 0o077 != 0 {
            return DoctorCheck(name: "token store", status: .warn, detail: "\(file) has mode \(String(mode, radix: 8)); others may read it",
                               fix: "chmod 600 \(file)")
        }
        return DoctorCheck(name: "token store", status: .ok, detail: "\(file) (mode 600)")
    }

    func clock() -> DoctorCheck {
        let now = options.clock.wallTime
        let year = Calendar(identifier: .gregorian).component(.year, from: now)
        if year < 2025 {
            return DoctorCheck(name: "clock", status: .fail, detail: "the system clock says \(now)",
                               fix: "set the time (token expiry depends on it): 'sudo timedatectl set-ntp true'")
        }
        return DoctorCheck(name: "clock", status: .ok, detail: "\(ISO8601DateFormatter().string(from: now))")
    }

    /// Runs a command briefly (a ``ChildProcess``, its output read on a SwiftNIO pipe: no thread waits) and returns
    /// its output, standard output and error together (empty when it cannot start).
    static func run(_ executable: String, _ arguments: [String]) async -> String {
        (try? await ChildProcess.run(executable, arguments, withErrors: true))?.text ?? ""
    }
}

/// Collects browse events for the doctor.
private actor Collector {
    var unavailable: String?
    var byInstance: [ServiceInstance: ResolvedService] = [:]
    var isUnavailable: Bool { unavailable != nil }
    var services: [ResolvedService] { Array(byInstance.values) }

    func add(_ event: BrowseEvent) {
        switch event {
        case .added(let service), .updated(let service): byInstance[service.instance] = service
        case .removed(let instance): byInstance.removeValue(forKey: instance)
        case .daemonUnavailable(let reason): unavailable = reason
        case .daemonAvailable: unavailable = nil
        case .failure(let error): unavailable = unavailable ?? error.description
        case .allForNow: break
        }
    }
}
