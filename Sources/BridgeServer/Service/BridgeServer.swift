import BridgeACP
import BridgeHTTP
import BridgePairing
import BridgeRPC
import BridgeTailscale
import BridgeTime
import Foundation
import Hummingbird
import HummingbirdCore
public import Logging
import Metrics
import NIOCore
public import ServiceLifecycle

/// The bridge: a JSON-RPC 2.0 WebSocket endpoint (both ACP dialects) in front of one ACP agent,
/// plus `GET /api/health`.
///
/// Run it in a `ServiceGroup`, or call ``run()`` directly.
public struct BridgeServer: Service {
    private let configuration: BridgeServerConfiguration
    private let logger: Logger
    private let onListening: @Sendable (_ port: Int) async -> Void

    /// Creates the server.
    ///
    /// `onListening` is called with the port actually bound (useful with port 0).
    public init(
        configuration: BridgeServerConfiguration,
        logger: Logger,
        onListening: @escaping @Sendable (_ port: Int) async -> Void = { _ in }
    ) {
        self.configuration = configuration
        self.logger = logger
        self.onListening = onListening
    }

    /// Serves until cancelled or gracefully shut down.
    ///
    /// Throws ``BridgeServerError`` when it cannot listen.
    public func run() async throws {
        let configuration = self.configuration
        let logger = self.logger
        let hub = try BridgeHub(configuration: configuration, logger: logger)
        // --auth none: loopback and the allowed networks only.
        let gate = try NetworkGate(for: configuration)
        let slots = ConnectionSlots(limit: configuration.maxConnections)
        let admission = ConnectionAdmission(for: configuration)
        let refusals = UpgradeRefusals(clock: configuration.clock)
        let http = BridgeHTTPRouter(configuration: configuration, gate: gate, started: configuration.clock.wallTime, logger: logger)

        let webSocketRouter = Router(context: BridgeWebSocketRequestContext.self)
        let authorizeUpgrade = configuration.authorizeUpgrade ?? configuration.authenticator?.upgradeAuthorizer()
        let plaintext = PlaintextPolicy(for: configuration)
        let browsers = BrowserOriginPolicy(for: configuration)
        // ACP's Streamable HTTP profile at /acp (POST, GET SSE, DELETE): the upgrade's checks, the same hub.
        StreamableHTTPRoutes(
            hub: hub, access: .init(browsers: browsers, plaintext: plaintext, gate: gate, authorize: authorizeUpgrade),
            slots: slots, registry: StreamableHTTPRegistry(), configuration: configuration, logger: logger
        ).register(on: http.router)
        // A request this route answers `200 OK` is upgraded (BridgeUpgradeChannel); a refusal is thrown, recorded for
        // the channel, and answered by RefusalResponseHandler.
        let upgradeCheck: @Sendable (Request, BridgeWebSocketRequestContext) async throws -> Response = { request, context in
            let remote = context.remoteAddress?.ipAddress
            // A web page of another site or host name (DNS rebinding) never gets a WebSocket, in any mode (issue 27.1).
            if let refusal = browsers.upgradeRefusal(request, context: context, logger: logger) {
                throw refusals.refuse(refusal, on: context)
            }
            if let refusal = plaintext.upgradeRefusal(request, context: context, logger: logger) {
                throw refusals.refuse(refusal, on: context)
            }
            if let gate, !gate.admits(remote) {
                logger.notice("WebSocket upgrade refused: outside the allowed networks", metadata: ["remote": "\(remote ?? "?")"])
                throw refusals.refuse(gate.refusal(for: remote), on: context)
            }
            if let refusal = slots.refusal() {
                logger.warning("WebSocket upgrade refused: connection limit reached", metadata: [
                    "limit": "\(configuration.maxConnections)", "remote": "\(remote ?? "?")",
                ])
                throw refusals.refuse(refusal, on: context)
            }
            if let authorize = authorizeUpgrade {
                let upgrade = BridgeUpgradeRequest(
                    path: request.uri.description, headers: request.headers,
                    remoteAddress: context.remoteAddress?.ipAddress, host: request.head.authority, isTLS: context.isTLS)
                switch await authorize(upgrade) {
                case .allow:
                    break
                case .authenticated(let device):
                    context.upgradeOutcome.device = device
                case .deny(let refusal):
                    BridgeMetrics.authFailures.increment()
                    logger.notice("WebSocket upgrade refused", metadata: [
                        "status": "\(refusal.status.code)", "reason": "\(refusal.code)", "message": "\(refusal.message)",
                        "remote": "\(context.remoteAddress?.ipAddress ?? "?")",
                    ])
                    throw refusals.refuse(refusal, on: context)
                }
            }
            return Response(status: .ok)
        }
        // The configured path (`/`) and `/acp`, the endpoint of ACP's remote-transport RFD: one check, hub and sessions.
        for path in Set([configuration.path, BridgeServer.acpPath]) {
            webSocketRouter.get(RouterPath(path), use: upgradeCheck)
        }
        let connect: BridgeUpgradeChannel.Connect = { upgraded in
            // Only small values in this closure: its async frame stays in the connection's task while it is open.
            let connection = ClientConnection(hub: hub, configuration: configuration, device: upgraded.device)
            let open = slots.open()
            defer {
                slots.close()
                // After the slot is free: a test waits for this line before it takes the slot again.
                logger.debug("connection slot freed", metadata: ["remote": "\(upgraded.remote ?? "?")"])
            }
            guard open <= configuration.eventLoopConnections else {
                return await connection.run(channel: upgraded.channel, messages: upgraded.messages, remote: upgraded.remote)
            }
            // One of the first few: its task runs on its channel's event loop (issue 14 goal 1). A message the handler
            // yields resumes it there with no thread woken, the hub (a default actor, when free) runs there too, and
            // the answer is written on the same thread. What has to wait runs off the loop (``BridgeHub/perform``).
            logger.debug("connection runs on its event loop", metadata: ["open": "\(open)", "remote": "\(upgraded.remote ?? "?")"])
            await withTaskExecutorPreference(EventLoopTaskExecutor(upgraded.channel.eventLoop)) {
                await connection.run(channel: upgraded.channel, messages: upgraded.messages, remote: upgraded.remote)
            }
        }
        let onListening = self.onListening
        let app = Application(
            responder: http.responder(),
            server: .bridge(
                webSocketRouter: webSocketRouter, configuration: configuration, admission: admission, refusals: refusals,
                connect: connect),
            configuration: ApplicationConfiguration(
                address: .hostname(configuration.host, port: configuration.port),
                serverName: configuration.serverName,
                // A backstop on file descriptors: past every limit of ``ConnectionAdmission`` plus room for the 503s
                // being written, Hummingbird stops accepting (new peers wait in the listen backlog).
                availableConnectionsDelegate: MaximumAvailableConnections(admission.maxAccepted + 256)),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? configuration.port
                logger.info("bridge listening", metadata: ["host": "\(configuration.host)", "port": "\(port)", "path": "\(configuration.path)"])
                await onListening(port)
            },
            logger: logger)

        try await withThrowingTaskGroup(of: Part.self) { group in
            group.addTask {
                await hub.run()
                return .agent
            }
            // The HTTP server runs in a service group of its own, shut down only once every client was told why
            // (1001 "bridge shutting down"): on a graceful shutdown the WebSocket library closes its connections
            // with 1000 itself, and that close raced the hub's. The group runs in a detached task because a nested
            // group follows its parent's graceful shutdown; cancellation is passed on by hand.
            let server = ServiceGroup(configuration: ServiceGroupConfiguration(services: [app], logger: logger))
            group.addTask {
                let (outcome, finished) = AsyncStream.makeStream(of: Result<Void, any Error>.self, bufferingPolicy: .bufferingNewest(1))
                let running = Task.detached {
                    do {
                        try await server.run()
                        finished.yield(.success(()))
                    } catch {
                        finished.yield(.failure(error))
                    }
                    finished.finish()
                }
                defer { running.cancel() }
                // Cancelled (the shutdown's time is up: `serve` stops within 2 s in every state, issue 25 item 1): the
                // server is cancelled and not waited for; a connection still closing (a TLS peer that never answers
                // close_notify holds NIOSSL's goodbye for 5 s, finding F5b) goes with the process.
                var results = outcome.makeAsyncIterator()
                guard let result = await results.next() else {
                    logger.notice("the HTTP server's shutdown was cut short; connections still closing are left to the process's end")
                    return .app
                }
                if case .failure(let error) = result {
                    throw BridgeServer.explain(error, host: configuration.host, port: configuration.port)
                }
                return .app
            }
            if let certificates = configuration.tailscaleCertificates {
                // Issue 11: the MagicDNS name's certificate, fetched from tailscaled and renewed until cancelled.
                group.addTask {
                    await certificates.run(logger: logger)
                    return .tailscaleCertificates
                }
            }
            group.addTask {
                // Graceful shutdown (SIGTERM/SIGINT in a ServiceGroup): the HTTP server stops accepting and waits
                // for the WebSockets to close; the hub closes them with 1001.
                guard (try? await gracefulShutdown()) != nil else { return .shutdownWatch }
                await hub.beginShutdown()
                await hub.waitForClientsToLeave(within: BridgeServer.clientsToldLimit)
                await server.triggerGracefulShutdown()
                return .shutdownWatch
            }
            defer { group.cancelAll() }
            // The app ends first (shutdown or failure); then prompts get their grace period and the agent goes.
            do {
                while let part = try await group.next(), part != .app {}
            } catch {
                await hub.shutdown()
                throw error
            }
            await hub.shutdown()
            logger.info("bridge stopped")
        }
    }

    /// The WebSocket endpoint of ACP's "Streamable HTTP & WebSocket Transport" RFD, served beside the configured path.
    public static let acpPath = "/acp"

    /// How long a graceful shutdown waits for the clients told 1001 to go before the HTTP server shuts down too.
    ///
    /// One second: `serve` stops within two in every state (issue 25 item 1).
    static let clientsToldLimit: Duration = .seconds(1)

    /// The tasks ``run()`` runs side by side.
    private enum Part: Sendable {
        case agent, app, shutdownWatch, tailscaleCertificates
    }

    /// Turns a bind failure into an error that names the port and says what to do, by the system error's number
    /// (`IOError.errnoCode`) or NIO's address-resolution error; anything else is returned as it is.
    ///
    /// A taken port names its holder when `holder` finds one.
    static func explain(
        _ error: any Error, host: String, port: Int, holder: (_ port: Int) -> PortHolder? = { PortHolder.listening(on: $0) }
    ) -> any Error {
        switch error {
        case let error as IOError:
            switch error.errnoCode {
            case EADDRINUSE:
                return BridgeServerError.portInUse(host: host, port: port, holder: holder(port))
            case EACCES, EPERM:
                return BridgeServerError.portNotPermitted(host: host, port: port)
            default:
                return BridgeServerError.bindFailed(host: host, port: port, reason: String(cString: strerror(error.errnoCode)))
            }
        case let error as SocketAddressError:
            return BridgeServerError.bindFailed(host: host, port: port, reason: "\(error)")
        default:
            return error
        }
    }
}
