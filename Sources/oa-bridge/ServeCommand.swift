import ArgumentParser
import BridgeConfig
import BridgePairing
import BridgePairingUI
import BridgeServer
import BridgeTLS
import Foundation
import Logging
import Metrics
import Prometheus
import ServiceLifecycle
import UnixSignals

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
        var serviceOptions = try settings.serviceOptions(version: BridgeVersion.current, logger: logger)
        // A prompt in flight at a signal gets a second to end before it is cancelled, so serve stops within
        // ``gracefulShutdownLimit`` (issue 25 item 1).
        serviceOptions.configuration.shutdownGracePeriod = .seconds(1)
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        serviceOptions.configuration.metricsRegistry = registry
        let service: BridgeService
        // The pairing code's later changes, printed by a task of serve's group below as long as serve runs.
        let (banners, bannerShown) = AsyncStream.makeStream(of: Banner.self)
        do {
            service = try await BridgeService(options: serviceOptions, logger: logger) { listening in
                let banner = Banner(
                    pairing: listening.pairing, port: listening.port, certificateFingerprint: listening.identity.certificateFingerprint)
                await bannerShown.yield(banner.withChanges(ServeCommand.printBanner(banner, logger: logger)))
            }
        } catch InstallIdentityError.unusableStateDirectory(let path, let reason) {
            throw ServeError.stateDirectory(path: path, reason: reason)
        }
        var groupConfiguration = ServiceGroupConfiguration(
            services: [.init(service: service, successTerminationBehavior: .gracefullyShutdownGroup, failureTerminationBehavior: .gracefullyShutdownGroup)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger)
        // Issue 25 item 1: a signal stops serve within 2 s in every state. What has not finished its graceful
        // shutdown (clients told 1001, goodbye packets) by then is cancelled.
        groupConfiguration.maximumGracefulShutdownDuration = ServeCommand.gracefulShutdownLimit
        let group = ServiceGroup(configuration: groupConfiguration)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            tasks.addTask { await ServeCommand.exitOnSecondSignal(logger: logger) }
            // Ends only when cancelled, with the others, once serve has stopped.
            tasks.addTask {
                for await banner in banners { await ServeCommand.printChanges(banner, logger: logger) }
            }
            try await tasks.next()
            tasks.cancelAll()
        }
    }

    /// How long a graceful shutdown may take before what is left is cancelled.
    static let gracefulShutdownLimit: Duration = .milliseconds(1500)

    /// A second SIGTERM or SIGINT while shutting down ends the process at once, as users of a command line expect of
    /// a second Ctrl-C.
    static func exitOnSecondSignal(logger: Logger) async {
        var signals = 0
        for await signal in await UnixSignalsSequence(trapping: .sigterm, .sigint) {
            signals += 1
            if signals == 2 {
                logger.warning("second \(signal): stopping now, without waiting for the shutdown to finish")
                Foundation.exit(1)
            }
        }
    }
}

extension ServeCommand {
    /// What the banner shows: the pairing session, the port, the certificate's fingerprint; with `changes`, the
    /// stream of the pairing code's changes subscribed to before the first code was printed.
    struct Banner: Sendable {
        let pairing: PairingSession
        let port: Int
        let certificateFingerprint: String
        var changes: AsyncStream<PairingPayload>?

        init(pairing: PairingSession, port: Int, certificateFingerprint: String) {
            self.pairing = pairing
            self.port = port
            self.certificateFingerprint = certificateFingerprint
        }

        func withChanges(_ changes: AsyncStream<PairingPayload>) -> Banner {
            var banner = self
            banner.changes = changes
            return banner
        }
    }

    /// Prints the pairing QR code and URL (stdout), as 'oa-bridge pair' does, and returns the stream of its later
    /// changes (subscribed to first, so none is missed) for ``printChanges(_:logger:)``.
    static func printBanner(_ banner: Banner, logger: Logger) async -> AsyncStream<PairingPayload> {
        let changes = await banner.pairing.changes()
        do {
            let payload = try await banner.pairing.payload()
            try await printCode(payload, pairing: banner.pairing, port: banner.port, certificateFingerprint: banner.certificateFingerprint)
        } catch {
            logger.error("cannot show the pairing code: \(error)")
        }
        return changes
    }

    /// Each time the code is used by a phone or replaced, prints the new one (issue 29 item 3), so the code on screen
    /// always pairs the next phone; until the task is cancelled (the stream then ends).
    static func printChanges(_ banner: Banner, logger: Logger) async {
        guard let changes = banner.changes else { return }
        for await payload in changes {
            FileHandle.standardOutput.write(Data("The pairing code was used or replaced. The next phone scans this new one:\n".utf8))
            do {
                try await printCode(payload, pairing: banner.pairing, port: banner.port, certificateFingerprint: banner.certificateFingerprint)
            } catch {
                logger.error("cannot show the new pairing code: \(error)")
            }
        }
    }

    private static func printCode(_ payload: PairingPayload, pairing: PairingSession, port: Int, certificateFingerprint: String) async throws {
        let text = try PairingBanner.text(
            payload: payload, expiresAt: await pairing.expiresAt(), port: port, certificateFingerprint: certificateFingerprint,
            ansiColors: isatty(STDOUT_FILENO) != 0, terminal: PairingBanner.TerminalSize.ofStandardOutput(),
            commands: FlagAdvice.pairingCommands(port: port))
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }
}
