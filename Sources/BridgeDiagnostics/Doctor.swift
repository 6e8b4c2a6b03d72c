import BridgeClient
import BridgeDiscovery
import BridgePairing
import Foundation
import Logging

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

        /// Creates options.
        public init(backend: any DiscoveryBackend, stateDirectory: URL) {
            self.backend = backend
            self.stateDirectory = stateDirectory
        }
    }

    private let options: Options
    private let logger: Logger

    /// Creates a doctor.
    public init(options: Options, logger: Logger) {
        self.options = options
        self.logger = logger
    }

    /// Runs every check, in the order a person would debug.
    public func run() async -> [DoctorCheck] {
        var checks: [DoctorCheck] = []
        checks.append(systemBus())
        checks.append(contentsOf: await mdns())
        checks.append(multicastInterfaces())
        checks.append(contentsOf: await bridgePort())
        checks.append(contentsOf: firewall())
        checks.append(tailscale())
        checks.append(tokenStore())
        checks.append(clock())
        return checks
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

    /// Browses our service type: tells whether the daemon answers and whether we see ourselves.
    func mdns() async -> [DoctorCheck] {
        let events = options.backend.browse(.openAgents, domain: nil)
        var unavailable: String?
        var services: [ResolvedService] = []
        let deadline = ContinuousClock.now + options.browseTime
        await withTaskGroup(of: Void.self) { group in
            let collector = Collector()
            group.addTask {
                for await event in events {
                    await collector.add(event)
                }
            }
            while ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(100))
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
            return [daemon, DoctorCheck(name: "our service visible", status: .fail, detail: "cannot browse without the daemon")]
        }
        daemon = DoctorCheck(name: "avahi-daemon", status: .ok, detail: "answering over D-Bus (\(options.backend.name) backend)")
        let ours = services.filter(\.isLocal)
        let visible: DoctorCheck
        if let own = ours.first {
            visible = DoctorCheck(name: "our service visible", status: .ok,
                                  detail: "'\(own.instance.name)' on port \(own.port) via \(own.interfaces.joined(separator: ",")); \(services.count) bridge(s) on the network")
        } else {
            visible = DoctorCheck(name: "our service visible", status: .warn,
                                  detail: "no _openagents._tcp service from this machine (\(services.count) from others)",
                                  fix: "start the bridge: 'oa-bridge serve'")
        }
        return [daemon, visible]
    }

    func multicastInterfaces() -> DoctorCheck {
        let interfaces = NetworkInterfaces.multicastCapable()
        if interfaces.isEmpty {
            return DoctorCheck(name: "multicast interfaces", status: .fail, detail: "no interface is up with multicast (besides loopback)",
                               fix: "connect to a network; enable multicast with 'sudo ip link set dev IFACE multicast on'")
        }
        return DoctorCheck(name: "multicast interfaces", status: .ok,
                           detail: interfaces.map { "\($0.name) \($0.addresses.joined(separator: " "))" }.joined(separator: "; "))
    }

    /// The bridge on this machine, asked without a token over loopback (`/api/health`, then `/api/status` for the
    /// auth mode): a bridge that wants pairing is running, not "nothing answers".
    func bridgePort() async -> [DoctorCheck] {
        let name = "port \(options.port)"
        let finding = await ProbeLocalBridge(port: options.port).check()
        guard finding.running else {
            return [DoctorCheck(name: name, status: .warn, detail: "nothing answers on \(finding.url): \(finding.error ?? "no answer")",
                                fix: "start the bridge: 'oa-bridge serve' (or pass --port if it uses another port)")]
        }
        let answered = String(format: "the bridge answers on %@ in %.0f ms", finding.url, finding.ms)
        switch finding.auth {
        case .token?:
            return [DoctorCheck(name: name, status: .ok, detail: "\(answered); auth: token (phones pair with the QR code from 'oa-bridge pair')")]
        case .none?:
            return [DoctorCheck(name: name, status: .ok, detail: "\(answered); auth: none (only loopback and --allow-network peers may connect)")]
        case nil:
            return [DoctorCheck(name: name, status: .ok, detail: "\(answered); its auth mode is unknown (/api/status did not say)")]
        }
    }

    func firewall() -> [DoctorCheck] {
        var checks: [DoctorCheck] = []
        if let ufw = TailscaleStatusReader.find("ufw") {
            let output = Doctor.run(ufw, ["status"])
            if output.contains("Status: active") {
                let openMDNS = output.contains("5353")
                let openPort = output.contains(String(options.port))
                let status: DoctorCheck.Status = openMDNS && openPort ? .ok : .warn
                checks.append(DoctorCheck(name: "firewall (ufw)", status: status,
                                          detail: "active; mDNS \(openMDNS ? "allowed" : "not listed"), port \(options.port) \(openPort ? "allowed" : "not listed")",
                                          fix: status == .ok ? nil : "sudo ufw allow 5353/udp && sudo ufw allow \(options.port)/tcp"))
            }
        }
        if let firewallCmd = TailscaleStatusReader.find("firewall-cmd"), Doctor.run(firewallCmd, ["--state"]).contains("running") {
            let services = Doctor.run(firewallCmd, ["--list-all"])
            let ok = services.contains("mdns") && services.contains("\(options.port)/tcp")
            checks.append(DoctorCheck(name: "firewall (firewalld)", status: ok ? .ok : .warn, detail: "running",
                                      fix: ok ? nil : "sudo firewall-cmd --add-service=mdns --add-port=\(options.port)/tcp --permanent && sudo firewall-cmd --reload"))
        }
        if checks.isEmpty {
            checks.append(DoctorCheck(name: "firewall", status: .ok, detail: "no ufw or firewalld active (other filters, e.g. nftables rules or the router's client isolation, are not checked)"))
        }
        return checks
    }

    func tailscale() -> DoctorCheck {
        do {
            let identity = try options.tailscale.read()
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
        let year = Calendar(identifier: .gregorian).component(.year, from: Date())
        if year < 2025 {
            return DoctorCheck(name: "clock", status: .fail, detail: "the system clock says \(Date())",
                               fix: "set the time (token expiry depends on it): 'sudo timedatectl set-ntp true'")
        }
        return DoctorCheck(name: "clock", status: .ok, detail: "\(ISO8601DateFormatter().string(from: Date()))")
    }

    /// Runs a command briefly and returns its output (empty on failure).
    static func run(_ executable: String, _ arguments: [String]) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        do { try process.run() } catch { return "" }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
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
