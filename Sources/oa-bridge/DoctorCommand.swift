import ArgumentParser
import BridgeDiagnostics
import BridgeDiscovery
import BridgePairing
import Foundation
import Logging

/// `oa-bridge doctor`: why can't the phone find or reach this desktop?
struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check everything a phone needs to find and reach this desktop, with the fix for each problem.",
        discussion: """
        Checks, in order: the D-Bus system bus, avahi-daemon, whether this machine's bridge is \
        visible over mDNS, a self-check (a short-lived test service of type _oabridge-check._tcp \
        published through the daemon and browsed back on this host), interfaces that are up \
        without the MULTICAST flag, IPv6 switched off, whether the bridge port answers (without a \
        token), a bridge listening on loopback only, bridges that mDNS shows but that do not \
        answer TCP (with their ARP/NDP neighbour state: an address from another network, as a \
        router's mDNS reflector passes on, has none), firewall rules (ufw, firewalld), Tailscale, \
        the token store, the TLS identity and the clock. Every finding comes with its fix.

        Exit status: 0 all ok, 1 some warning, 2 some failure.

        Examples:
          oa-bridge doctor
          oa-bridge doctor --port 9100 --backend dnssd
          oa-bridge doctor --json
          oa-bridge doctor --no-self-check     skip publishing the test service
        """
    )

    @Option(help: "The bridge port to check.")
    var port: Int = 9099

    @Option(help: "The mDNS implementation to test: avahi or dnssd.")
    var backend: BackendKind = .platformDefault

    @Option(help: "Where the bridge keeps its state. Default: $XDG_STATE_HOME/oa-bridge or ~/.local/state/oa-bridge.")
    var stateDir: String?

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
        let checks = await Doctor(options: options, logger: logger).run()
            + [DoctorCheck.tlsIdentity(stateDirectory: StateDirectory.resolve(override: stateDir)), DoctorCheck.terminalConfinement()]
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
