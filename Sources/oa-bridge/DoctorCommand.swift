public import ArgumentParser
import BridgeConfig
import BridgeDiagnostics
import BridgeDiscovery
import BridgePairing
import Foundation
import Logging

/// `oa-bridge doctor`: says why the phone cannot find or reach this desktop.
struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check what this machine needs to find and reach a bridge (or, on the desk, to be found and reached), with the fix for each problem.",
        discussion: """
        Doctor first decides where it runs. The desk is a machine where a bridge answers or \
        listens, or is set up (a serve config file, the install-service unit, a TLS identity or \
        token store in the state directory); anywhere else it is a client (a laptop or phone \
        that connects to a bridge elsewhere). --role desk|client overrides the decision.

        Both roles: the D-Bus system bus, avahi-daemon, a self-check (a short-lived test service \
        of type _oabridge-check._tcp published through the daemon and browsed back on this \
        host), interfaces up without the MULTICAST flag, IPv6 switched off, bridges that mDNS \
        shows but that do not answer TCP (advice by how they failed: a timeout is a firewall \
        first, a refusal a stopped bridge; an address with no ARP/NDP neighbour was reflected \
        from another network), Tailscale and the clock.

        Desk: whether this machine's bridge is visible over mDNS, whether the port answers on \
        loopback (without a token) and from this machine's LAN addresses, a bridge listening on \
        loopback only, nftables and iptables rules that drop or reject the port (read as root; \
        named with the command that lets the port through), ufw and firewalld, the token store, \
        the TLS identity and terminal confinement.

        Client: the bridges announced on the network, and each saved bridge (those 'oa-bridge \
        connect' paired with): reached at its saved addresses, held to its saved pin, and its \
        token checked (renewed if due, as connect does).

        Exit status: 0 all ok, 1 some warning, 2 some failure (only problems for the role).

        Examples:
          oa-bridge doctor
          sudo oa-bridge doctor                 on the desk: also reads the nftables/iptables rules
          oa-bridge doctor --role desk          a desk whose bridge is not set up yet
          oa-bridge doctor --port 9100 --backend dnssd
          oa-bridge doctor --json
          oa-bridge doctor --no-self-check      skip publishing the test service
        """
    )

    @Option(help: "The bridge port to check.")
    var port: Int = 9099

    @Option(help: "The mDNS implementation to test: avahi or dnssd.")
    var backend: BackendKind = .platformDefault

    @Option(help: "Where the bridge keeps its state. Default: $XDG_STATE_HOME/oa-bridge or ~/.local/state/oa-bridge.")
    var stateDir: String?

    @Option(help: "Check as the desk or as a client: desk or client. Default: decided from what is on this machine.")
    var role: DoctorRole?

    @Option(help: "The serve config file (evidence that a bridge is set up here). Default: $OA_BRIDGE_CONFIG, else ~/.config/oa-bridge/config.yaml.")
    var config: String?

    @Flag(help: "Print the checks as one JSON array.")
    var json = false

    @Flag(inversion: .prefixedNo, help: "Publish a short-lived test service through the daemon and browse for it on this host.")
    var selfCheck = true

    func run() async throws {
        LoggingSetup.bootstrap(level: .critical, format: .text)
        let logger = Logger(label: "oa-bridge.doctor")
        var options = Doctor.Options(backend: try backend.make(logger: logger), stateDirectory: StateDirectory.resolve(override: stateDir))
        options.port = port
        options.selfCheck = selfCheck
        options.role = role
        let environment = ProcessInfo.processInfo.environment
        options.configFile = config ?? environment["OA_BRIDGE_CONFIG"] ?? ConfigFile.defaultPath(environment: environment)
        options.serviceUnit = SystemdUnit.userUnitPath(name: "oa-bridge", environment: environment)
        let (decided, found) = await Doctor(options: options, logger: logger).runReporting()
        var checks = found
        if decided == .desk {
            checks += [DoctorCheck.tlsIdentity(stateDirectory: StateDirectory.resolve(override: stateDir)), DoctorCheck.terminalConfinement()]
            checks.append(await DoctorCheck.dpopBinding(stateDirectory: StateDirectory.resolve(override: stateDir)))
        }
        // The libraries' fixes say what to change; the command line names the flag.
        checks = checks.map(FlagAdvice.withFlag)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(checks), as: UTF8.self))
        } else {
            let width = checks.map(\.name.count).max() ?? 0
            for check in checks {
                print("\(check.status.rawValue.padding(toLength: 4, withPad: " ", startingAt: 0))  \(check.name.padding(toLength: width, withPad: " ", startingAt: 0))  \(check.detail)")
                if let fix = check.fix { print("      \(String(repeating: " ", count: width))  fix: \(fix)") }
            }
        }
        switch checks.map(\.status).max() ?? .ok {
        case .ok: return
        case .warn: throw ExitCode(1)
        case .fail: throw ExitCode(2)
        }
    }
}

extension DoctorRole: ExpressibleByArgument {}
