import ArgumentParser
import BridgeClient
import BridgeDiscovery
import Foundation
import Logging

/// `oa-bridge discover`: browse, resolve and show bridges on the network, for people debugging mDNS.
struct DiscoverCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "discover",
        abstract: "Show the bridges (or any DNS-SD service) on the local network, resolved and timed.",
        discussion: """
        Browses _openagents._tcp through the local mDNS daemon and resolves every instance to its \
        host, addresses, port, TXT record and interface, with the time each took to resolve.

        One-shot (default): stops once the daemon has reported what it knows and every instance \
        has resolved, or after --timeout. Exit status: 0 something was found, 1 nothing was found, \
        2 the daemon could not be reached or the arguments are wrong.

        Examples:
          oa-bridge discover                    what is there now, as a table
          oa-bridge discover --probe            ...and check each one answers the initialize handshake
          oa-bridge discover --watch            live: + added, ~ updated, - removed (Ctrl-C stops)
          oa-bridge discover --watch --json     one JSON object per event, for scripts
          oa-bridge discover --type _ssh._tcp   any other service type
        """
    )

    @Option(help: "The DNS-SD service type to browse.")
    var type: String = ServiceType.openAgents.rawValue

    @Option(help: "The browsing domain.")
    var domain: String = "local"

    @Option(help: "Seconds a one-shot browse waits at most.")
    var timeout: Double = 5

    @Flag(help: "Wait the whole --timeout instead of stopping once the daemon has reported everything.")
    var wait = false

    @Flag(help: "Keep running and show services as they come, change and go.")
    var watch = false

    @Flag(help: "Print one JSON object per event instead of text.")
    var json = false

    @Flag(help: "Connect to each service found and time the JSON-RPC initialize handshake.")
    var probe = false

    @Option(help: "The mDNS implementation: avahi (libavahi-client) or dnssd (the dns_sd API).")
    var backend: BackendKind = .platformDefault

    @Option(help: "Log level for diagnostics on stderr (trace, debug, info, notice, warning, error).")
    var logLevel: Logger.Level = .warning

    func validate() throws {
        guard timeout > 0, timeout <= 86_400 else { throw ValidationError("--timeout must be between 0 and 86400 seconds") }
        do { _ = try ServiceType(type) } catch { throw ValidationError("\(error)") }
    }

    func run() async throws {
        LoggingSetup.bootstrap(level: logLevel, format: .text)
        let logger = Logger(label: "oa-bridge.discover")
        let serviceType = try ServiceType(type)
        let discoveryBackend = try backend.make(logger: logger)
        let output = DiscoverOutput(json: json, watch: watch, probe: probe, type: serviceType)
        let session = DiscoverSession(
            events: discoveryBackend.browse(serviceType, domain: domain),
            output: output,
            prober: probe ? HandshakeProbe(logger: logger) : nil,
            watch: watch,
            stopEarly: !wait)
        let deadline: Duration? = watch ? nil : .milliseconds(Int(timeout * 1_000))
        let outcome = await session.run(deadline: deadline)
        switch outcome {
        case .daemonUnavailable(let reason):
            await output.daemonUnavailable(reason: reason, backend: backend)
            throw ExitCode(2)
        case .finished(let services):
            await output.finish(services: services, timeout: timeout)
            if !watch && services.isEmpty { throw ExitCode(1) }
        }
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
