public import BridgeDiscovery
public import BridgeTailscale
public import Logging
import Metrics
public import ServiceLifecycle

/// Advertises the bridge over mDNS once the server listens, and withdraws it (goodbye packets)
/// on graceful shutdown.
///
/// Daemon trouble never stops the bridge: it says once, in one line, that discovery is off and
/// why, and the backend keeps retrying.
public struct BridgeAnnouncer: Service {
    private let backend: any DiscoveryBackend
    private let makeRegistration: @Sendable (_ port: Int) throws -> ServiceRegistration
    private let listeningPorts: AsyncStream<Int>
    private let logger: Logger
    private let tailnet: TailnetRefresh?

    /// How the tailnet name in TXT is kept current: read it again every `interval`, and build the
    /// TXT record for what was read.
    public struct TailnetRefresh: Sendable {
        /// How often to read the tailnet identity again.
        public var interval: Duration
        /// The MagicDNS name advertised at start, if any.
        public var initial: String?
        /// Reads the tailnet identity (`nil` when Tailscale is not running).
        public var read: @Sendable () async -> TailnetIdentity?
        /// The TXT record for a tailnet identity.
        public var txt: @Sendable (_ tailnet: TailnetIdentity?) throws -> TXTRecord

        /// A refresh every `interval` (default 30 s) starting from `initial`.
        public init(interval: Duration = .seconds(30), initial: String?, read: @escaping @Sendable () async -> TailnetIdentity?,
                    txt: @escaping @Sendable (_ tailnet: TailnetIdentity?) throws -> TXTRecord) {
            self.interval = interval
            self.initial = initial
            self.read = read
            self.txt = txt
        }
    }

    /// Creates the announcer; it advertises on the first port `listeningPorts` yields, registering what
    /// `registration` makes for that port.
    public init(backend: any DiscoveryBackend, listeningPorts: AsyncStream<Int>, logger: Logger, tailnet: TailnetRefresh? = nil,
         registration: @escaping @Sendable (_ port: Int) throws -> ServiceRegistration) {
        self.backend = backend
        self.listeningPorts = listeningPorts
        self.logger = logger
        self.tailnet = tailnet
        self.makeRegistration = registration
    }

    /// The announcer of `oa-bridge serve`: the service `name` on the listening port, with the bridge's TXT record
    /// (install id, auth mode, WebSocket path, TLS, and the tailnet name, kept current every 30 s).
    public init(
        backend: any DiscoveryBackend, listeningPorts: AsyncStream<Int>, name: String, installID: String, auth: String,
        path: String, tls: Bool, tailnet: TailnetIdentity?, logger: Logger
    ) {
        let txt: @Sendable (TailnetIdentity?) throws -> TXTRecord = { identity in
            try BridgeTXT.record(installID: installID, auth: auth, path: path, tls: tls,
                                 extra: [("acp", BridgeServer.acpPath)] + (identity.map { [("tailnet", $0.dnsName)] } ?? []))
        }
        let refresh = TailnetRefresh(initial: tailnet?.dnsName, read: { await TailnetLookup.current(logger: logger, announce: false) }, txt: txt)
        self.init(backend: backend, listeningPorts: listeningPorts, logger: logger, tailnet: refresh) { port in
            try ServiceRegistration(name: name, port: UInt16(port), txt: txt(tailnet))
        }
    }

    /// Advertises on the first listening port until graceful shutdown or cancellation, then withdraws.
    public func run() async throws {
        // Issue 25 item 1: a server that never listens (port taken) shuts the group down gracefully; waiting for its
        // port must end then too, or the group, and with it `serve` and its signal handling, waits forever.
        var ports = listeningPorts.cancelOnGracefulShutdown().makeAsyncIterator()
        guard let port = await ports.next() else { return }
        let registration = try makeRegistration(port)
        let advertisement = backend.advertise(registration)
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await report(advertisement.events, registration: registration) }
                if let tailnet {
                    group.addTask { await watch(tailnet, advertisement: advertisement) }
                }
                await group.next()
                group.cancelAll()
            }
        } onGracefulShutdown: {
            advertisement.cancel()
        }
        // Goodbye packets on their way before the process exits; bounded, so a daemon that does not answer cannot
        // hold up the shutdown.
        await advertisement.withdraw()
    }

    /// Re-reads the tailnet identity and updates TXT when the MagicDNS name changes (or appears/goes).
    private func watch(_ tailnet: TailnetRefresh, advertisement: Advertisement) async {
        var current = tailnet.initial
        while !Task.isCancelled {
            do { try await Task.sleep(for: tailnet.interval) } catch { return }
            let identity = await tailnet.read()
            let name = identity?.dnsName
            guard name != current else { continue }
            do {
                advertisement.updateTXT(try tailnet.txt(identity))
                logger.notice("tailnet name changed; TXT updated", metadata: ["old": "\(current ?? "none")", "new": "\(name ?? "none")"])
                current = name
            } catch {
                logger.error("cannot update TXT for the tailnet name: \(error)")
            }
        }
    }

    private func report(_ events: AsyncStream<AdvertiseEvent>, registration: ServiceRegistration) async {
        // 1 while the service is registered with the mDNS daemon, 0 while discovery is off.
        let discoveryUp = Gauge(label: "oa_bridge_discovery_up")
        discoveryUp.record(0)
        var discoveryOff = false
        for await event in events {
            switch event {
            case .registered(let name):
                if discoveryOff {
                    logger.notice("discovery is on again: advertising '\(name)' as \(registration.type) on port \(registration.port)")
                } else {
                    logger.notice("advertising '\(name)' as \(registration.type) on port \(registration.port) (\(backend.name))")
                }
                discoveryOff = false
                discoveryUp.record(1)
            case .collision(let oldName, let newName):
                logger.notice("the name '\(oldName)' is taken on this network; advertising as '\(newName)' instead")
            case .daemonUnavailable(let reason):
                discoveryUp.record(0)
                if !discoveryOff {
                    discoveryOff = true
                    logger.warning("discovery is off: \(reason). Phones cannot find this bridge by name until avahi-daemon runs ('sudo systemctl start avahi-daemon'); they can still connect by address. Retrying in the background.")
                }
            case .failure(let error):
                logger.error("discovery: \(error)")
            }
        }
    }
}
