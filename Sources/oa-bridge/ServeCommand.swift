import ArgumentParser
import BridgeDiscovery
import BridgePairing
import BridgeServer
import Foundation
import Logging
import ServiceLifecycle

/// `oa-bridge serve`: the bridge itself.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve this desktop's agent to phones over a JSON-RPC WebSocket, advertised over mDNS.",
        discussion: """
        Listens on ws://HOST:PORT/ (default 0.0.0.0:9099) and advertises the service \
        _openagents._tcp under --name, with TXT metadata (txtvers, proto, id, auth, path). \
        Phones find it with DNS-SD, or connect by address when multicast is blocked.

        Behind the bridge runs an ACP agent: the built-in demo agent, or any agent command \
        given with --agent, spoken to over stdio (one JSON message per line).

        If avahi-daemon or D-Bus is not running the bridge still serves; it says once that \
        discovery is off and why, and advertises as soon as the daemon appears. SIGTERM or \
        Ctrl-C withdraws the advertisement and closes connections cleanly.

        Examples:
          oa-bridge serve
          oa-bridge serve --name "Studio Mac" --port 9100
          oa-bridge serve --agent 'gemini --acp'
        """
    )

    @Option(help: "The name phones see (the DNS-SD instance name). Default: this host's name.")
    var name: String?

    @Option(help: "The address to listen on; 0.0.0.0 for every IPv4 interface, :: for IPv6 too.")
    var host: String = "0.0.0.0"

    @Option(help: "The TCP port to listen on.")
    var port: Int = 9099

    @Option(help: "The ACP agent command to run behind the bridge, e.g. 'gemini --acp'. Default: the built-in demo agent.")
    var agent: String?

    @Option(help: "The working directory for agent sessions (and the agent process).")
    var workingDirectory: String = FileManager.default.currentDirectoryPath

    @Option(help: "mDNS advertising: avahi, dnssd, or off.")
    var discovery: DiscoveryChoice = .platformDefault

    @Option(help: "Where state is kept (install id, pairing database). Default: $XDG_STATE_HOME/oa-bridge or ~/.local/state/oa-bridge.")
    var stateDir: String?

    @Option(help: "Largest accepted WebSocket message, in bytes.")
    var maxFrameSize: Int = 1 << 20

    @Option(help: "Log level (trace, debug, info, notice, warning, error, critical).")
    var logLevel: Logger.Level = .info

    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
        if let name, name.isEmpty || name.utf8.count > 63 {
            throw ValidationError("--name must be 1 to 63 bytes")
        }
        guard maxFrameSize >= 1_024 else { throw ValidationError("--max-frame-size must be at least 1024 bytes") }
        if let agent {
            let words = try CommandLineSplitter.split(agent)
            guard !words.isEmpty else { throw ValidationError("--agent is empty; leave it out to use the demo agent") }
        }
    }

    func run() async throws {
        LoggingSetup.bootstrap(level: logLevel, format: .text)
        let logger = Logger(label: "oa-bridge.serve")
        let stateDirectory = StateDirectory.resolve(override: stateDir)
        let installID = try InstallIdentity.load(stateDirectory: stateDirectory)
        let serviceName = name ?? HostName.current
        let agentCommand = try agent.map(CommandLineSplitter.split)

        var configuration = BridgeServerConfiguration(serverName: serviceName, workingDirectory: workingDirectory)
        configuration.host = host
        configuration.port = port
        configuration.agentCommand = agentCommand
        configuration.maxFrameSize = maxFrameSize
        let path = configuration.path

        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self, bufferingPolicy: .bufferingNewest(1))
        let server = BridgeServer(configuration: configuration, logger: logger) { boundPort in
            logger.notice("oa-bridge \(BridgeVersion.current) serving ws://\(host):\(boundPort)\(path) (agent: \(agentCommand?.joined(separator: " ") ?? "built-in demo agent"))")
            portContinuation.yield(boundPort)
        }
        var services: [any Service] = [server]
        if let backend = try discovery.makeBackend(logger: logger) {
            let announcer = BridgeAnnouncer(backend: backend, listeningPorts: ports, logger: logger) { boundPort in
                try ServiceRegistration(
                    name: serviceName,
                    port: UInt16(boundPort),
                    txt: BridgeTXT.record(installID: installID, auth: "none", path: path))
            }
            services.append(announcer)
        } else {
            logger.notice("discovery is off (--discovery off): phones must connect by address")
        }
        let group = ServiceGroup(configuration: .init(
            services: services.map { .init(service: $0, successTerminationBehavior: .gracefullyShutdownGroup, failureTerminationBehavior: .gracefullyShutdownGroup) },
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        try await group.run()
    }
}

/// The `--discovery` choice for `serve`.
enum DiscoveryChoice: String, ExpressibleByArgument, CaseIterable, Sendable {
    case avahi
    case dnssd
    case off

    static var platformDefault: DiscoveryChoice {
        BackendKind.platformDefault == .avahi ? .avahi : .dnssd
    }

    func makeBackend(logger: Logger) throws -> (any DiscoveryBackend)? {
        switch self {
        case .avahi: return try BackendKind.avahi.make(logger: logger)
        case .dnssd: return try BackendKind.dnssd.make(logger: logger)
        case .off: return nil
        }
    }
}

/// This machine's host name, for the default service name.
enum HostName {
    static var current: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "oa-bridge" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let short = name.split(separator: ".").first.map(String.init) ?? name
        return short.isEmpty ? "oa-bridge" : short
    }
}
