public import ArgumentParser
import BridgeClient
import BridgeConfig
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
        host, addresses, port, TXT record and interface, with the time each took to resolve. \
        Naming conflicts (two hosts claiming one name, Avahi's 'Desk #2' renames, a name that keeps \
        renaming) are printed with their fix.

        One-shot (default): stops once the daemon has reported what it knows and every instance \
        has resolved, or after --timeout. Exit status: 0 something was found, 1 nothing was found, \
        2 the daemon could not be reached or the arguments are wrong.

        Examples:
          oa-bridge discover                    what is there now, as a table
          oa-bridge discover --probe            ...and check each one answers the initialize handshake
          oa-bridge discover --watch            live: + added, ~ updated (with the TXT diff), - removed
          oa-bridge discover --watch --json     one JSON object per event, for scripts
          oa-bridge discover --type _ssh._tcp   any other service type
          oa-bridge discover --all              every service type on the network: does mDNS work at all?
          oa-bridge discover --interface eth0   only what is seen on eth0 (not docker0, a VPN, ...)
          oa-bridge discover --resolve desk.local   a host name's addresses, as avahi-resolve --name
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

    @Flag(help: "Keep running and show services as they come, change (with a TXT diff) and go.")
    var watch = false

    @Flag(help: "Print one JSON object per event instead of text.")
    var json = false

    @Flag(help: "Connect to each service found and time the JSON-RPC initialize handshake.")
    var probe = false

    @Flag(help: "List every service type on the network (the _services._dns-sd._udp meta-query) instead of one type's services.")
    var all = false

    @Option(help: ArgumentHelp("Browse (or resolve) on this network interface only, e.g. eth0.", valueName: "name"))
    var interface: String?

    @Option(help: ArgumentHelp("Resolve an mDNS host name (desk.local, or desk) to its addresses, as avahi-resolve --name does.", valueName: "host"))
    var resolve: String?

    @Option(help: "The mDNS implementation: avahi (libavahi-client) or dnssd (the dns_sd API).")
    var backend: BackendKind = .platformDefault

    @Option(help: "Log level for diagnostics on stderr (trace, debug, info, notice, warning, error).")
    var logLevel: Logger.Level = .warning

    func validate() throws {
        guard timeout > 0, timeout <= 86_400 else { throw ValidationError("--timeout must be between 0 and 86400 seconds") }
        do { _ = try ServiceType(type) } catch { throw ValidationError("\(error)") }
        if all && resolve != nil { throw ValidationError("--all and --resolve ask different questions; pass one of them") }
        if resolve != nil && (watch || probe) { throw ValidationError("--resolve answers once; it takes neither --watch nor --probe") }
        if all && probe { throw ValidationError("--all lists service types; --probe needs bridges (drop --all)") }
    }

    func run() async throws {
        LoggingSetup.bootstrap(level: logLevel, format: .text)
        let logger = Logger(label: "oa-bridge.discover")
        let serviceType = try ServiceType(type)
        do {
            _ = try NetworkInterfaceName.index(of: interface)
        } catch {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            throw ExitCode(2)
        }
        let discoveryBackend = try backend.make(logger: logger)
        let output = DiscoverOutput(json: json, watch: watch, probe: probe, type: serviceType)
        if let resolve {
            try await resolveHost(resolve, backend: discoveryBackend, output: output)
        } else if all {
            try await listTypes(backend: discoveryBackend, output: output)
        } else {
            try await browse(serviceType, backend: discoveryBackend, output: output, logger: logger)
        }
    }

    private func browse(_ serviceType: ServiceType, backend discoveryBackend: any DiscoveryBackend, output: DiscoverOutput, logger: Logger) async throws {
        let session = DiscoverSession(
            events: discoveryBackend.browse(serviceType, domain: domain, interface: interface),
            output: output,
            prober: probe ? HandshakeProbe(logger: logger) : nil,
            watch: watch,
            stopEarly: !wait)
        let outcome = await session.run(deadline: watch ? nil : .milliseconds(Int(timeout * 1_000)))
        switch outcome {
        case .daemonUnavailable(let reason):
            await output.daemonUnavailable(reason: reason)
            throw ExitCode(2)
        case .finished(let services):
            await output.finish(services: services)
            if !watch && services.isEmpty { throw ExitCode(1) }
        }
    }

    private func listTypes(backend discoveryBackend: any DiscoveryBackend, output: DiscoverOutput) async throws {
        let events = discoveryBackend.browseServiceTypes(domain: domain, interface: interface)
        let watching = watch
        var settle: (@Sendable () async -> Bool)?
        if !watch && !wait { settle = { @Sendable in await output.typesSettled() } }
        let body: @Sendable () async -> TypesEnd? = {
            for await event in events {
                if case .daemonUnavailable(let reason) = event, !watching { return .unavailable(reason) }
                await output.typeEvent(event)
            }
            return .ended
        }
        let end = await DiscoverSession.race(deadline: watch ? nil : .milliseconds(Int(timeout * 1_000)), settle: settle,
                                             body: body, fallback: { TypesEnd.ended })
        if case .unavailable(let reason) = end {
            await output.daemonUnavailable(reason: reason)
            throw ExitCode(2)
        }
        let types = await output.presentTypes()
        await output.finishTypes(types)
        if !watch && types.isEmpty { throw ExitCode(1) }
    }

    /// How a `--all` browse ended.
    private enum TypesEnd: Sendable {
        case unavailable(String)
        case ended
    }

    private func resolveHost(_ host: String, backend discoveryBackend: any DiscoveryBackend, output: DiscoverOutput) async throws {
        do {
            let resolution = try await discoveryBackend.resolveHost(host, interface: interface, timeout: .milliseconds(Int(timeout * 1_000)))
            await output.resolved(resolution)
        } catch .hostNotFound(let name, let seconds) {
            FileHandle.standardError.write(Data("\(DiscoveryError.hostNotFound(name: name, seconds: seconds))\n".utf8))
            throw ExitCode(1)
        } catch {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            throw ExitCode(2)
        }
    }
}

// The one retroactive conformance: it lives in the executable, which no module imports, so no other conformance of
// swift-log's type can meet it; a wrapper type would change the options' types and help for nothing.
// swift-format-ignore: AvoidRetroactiveConformances
extension Logger.Level: @retroactive ExpressibleByArgument {}
