import ArgumentParser
import BridgeConfig
import BridgeDiscovery
import BridgePairing
import BridgePairingUI
import BridgeServer
import Foundation
import Logging
import Metrics
import Prometheus
import ServiceLifecycle

/// `oa-bridge serve`: the bridge itself.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve this desktop's agent to phones over a JSON-RPC WebSocket, advertised over mDNS.",
        discussion: """
        Listens on ws://HOST:PORT/ (default [::]:9099: IPv6 and IPv4; 0.0.0.0:9099 where IPv6 is off) and advertises the service \
        _openagents._tcp under --name, with TXT metadata (txtvers, proto, id, auth, path). \
        Phones find it with DNS-SD, or connect by address when multicast is blocked.

        Behind the bridge runs an ACP agent: the built-in demo agent, or any agent command \
        given with --agent, spoken to over stdio (one JSON message per line).

        If avahi-daemon or D-Bus is not running the bridge still serves; it says once that \
        discovery is off and why, and advertises as soon as the daemon appears. SIGTERM or \
        Ctrl-C withdraws the advertisement and closes connections cleanly.

        Every option can also be set as OA_BRIDGE_<OPTION> (OA_BRIDGE_PORT=9100) or in the \
        config file (~/.config/oa-bridge/config.yaml: 'port: 9100'); 'oa-bridge config show' \
        prints the effective values and where each comes from.

        Examples:
          oa-bridge serve
          oa-bridge serve --name "Studio Mac" --port 9100
          oa-bridge serve --agent 'gemini --acp'
        """
    )

    @OptionGroup var options: ServeOptions

    func validate() throws {
        if let agent = options.agent {
            guard !(try CommandLineSplitter.split(agent)).isEmpty else {
                throw ValidationError("--agent is empty; leave it out to use the demo agent")
            }
        }
    }

    func run() async throws {
        let settings = try ServeSettings.resolve(options.flags)
        LoggingSetup.bootstrap(level: settings.logLevel.value, format: settings.logFormat.value)
        let logger = Logger(label: "oa-bridge.serve")
        let stateDirectory = StateDirectory.resolve(override: settings.stateDir.value)
        let installID: String
        do {
            installID = try InstallIdentity.load(stateDirectory: stateDirectory)
        } catch .unusableStateDirectory(let path, let reason) {
            throw ServeError.stateDirectory(path: path, reason: reason)
        }
        let serviceName = settings.name.value
        let agentCommand = try settings.agent.value.map(CommandLineSplitter.split)
        let host = settings.host.value

        var configuration = BridgeServerConfiguration(serverName: serviceName, workingDirectory: settings.workingDirectory.value)
        configuration.host = host
        configuration.port = settings.port.value
        configuration.agentCommand = agentCommand
        configuration.agentEnvironment = settings.agentEnv.value
        configuration.agentWorkingDirectory = settings.agentCwd.value
        configuration.maxFrameSize = settings.maxFrameSize.value
        configuration.allowedNetworks = settings.allowNetwork.value
        configuration.maxConnections = settings.maxConnections.value
        configuration.maxPendingConnectionsPerAddress = settings.maxPendingPerAddress.value
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        configuration.metricsRegistry = registry
        let path = configuration.path
        let discovery = settings.discovery.value

        let tailnet = await TailnetLookup.current(logger: logger)
        let auth = try ServeAuth.make(settings: settings, stateDirectory: stateDirectory, logger: logger)
        configuration.authenticator = auth.authenticator
        configuration.authorizeUpgrade = auth.authenticator?.upgradeAuthorizer()
        let identity = try ServeIdentity.load(stateDirectory: stateDirectory, tailnet: tailnet, logger: logger)
        configuration.tlsIdentity = identity
        configuration.tailscaleCertificates = TailnetLookup.certificates(for: tailnet)  // issue 11 item 6 (tls)
        configuration.allowPlaintext = settings.allowPlaintext.value
        if settings.allowPlaintext.value {
            logger.warning("PLAINTEXT ALLOWED (--allow-plaintext): pairing, tokens and prompts from other machines are accepted without TLS; anyone on the network can read them and drive this desktop's agent with a sniffed token")
        }
        let pairing = PairingSession(
            store: auth.store,
            endpoint: .init(
                host: LANAddress.preferred() ?? "127.0.0.1", port: settings.port.value, webSocketPath: path,
                session: UUID().uuidString.lowercased(), name: serviceName,
                fallbacks: tailnet.map { [$0.dnsName] + $0.addresses } ?? [], pin: identity.pin.description))
        configuration.pairing = pairing
        if auth.store == nil {
            logger.warning("AUTHENTICATION IS OFF (--auth none): any client on loopback\(settings.allowNetwork.value.isEmpty ? "" : " or in " + settings.allowNetwork.value.joined(separator: ", ")) can drive this desktop's agent without pairing")
        }

        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self, bufferingPolicy: .bufferingNewest(1))
        let server = BridgeServer(configuration: configuration, logger: logger) { boundPort in
            logger.notice("oa-bridge \(BridgeVersion.current) serving ws://\(host.contains(":") ? "[\(host)]" : host):\(boundPort)\(path) (agent: \(agentCommand?.joined(separator: " ") ?? "built-in demo agent"), auth: \(auth.store == nil ? "none" : "token"))")
            await ServeCommand.printBanner(pairing: pairing, port: boundPort, logger: logger)
            portContinuation.yield(boundPort)
        }
        var services: [any Service] = [server]
        if let backend = try discovery.makeBackend(logger: logger) {
            services.append(BridgeAnnouncer(
                backend: backend, listeningPorts: ports, name: serviceName, installID: installID,
                auth: auth.store == nil ? "none" : "token", path: path, tls: true, tailnet: tailnet, logger: logger))
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

extension ServeCommand {
    /// Prints the pairing QR code and URL (stdout), as 'oa-bridge pair' does.
    static func printBanner(pairing: PairingSession, port: Int, logger: Logger) async {
        do {
            let payload = try await pairing.payload()
            let text = try PairingBanner.text(payload: payload, expiresAt: await pairing.expiresAt(), port: port, ansiColors: isatty(STDOUT_FILENO) != 0)
            FileHandle.standardOutput.write(Data((text + "\n").utf8))
        } catch {
            logger.error("cannot show the pairing code: \(error)")
        }
    }
}

extension DiscoveryChoice {
    /// The backend that advertises, or `nil` for `off`.
    func makeBackend(logger: Logger) throws -> (any DiscoveryBackend)? {
        switch self {
        case .avahi: return try BackendKind.avahi.make(logger: logger)
        case .dnssd: return try BackendKind.dnssd.make(logger: logger)
        case .off: return nil
        }
    }
}
