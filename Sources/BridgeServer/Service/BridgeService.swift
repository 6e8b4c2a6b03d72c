public import BridgeDiscovery
import BridgeHTTP
public import BridgePairing
import BridgeSessionStore
public import BridgeTLS
public import BridgeTailscale
import BridgeTime
public import Foundation
public import Logging
public import ServiceLifecycle

/// The whole bridge as `oa-bridge serve` runs it, for an app that embeds the library: the installation id, the token
/// store (with `auth` token), the TLS identity, the pairing session with the Tailscale fallback, the server, and the
/// mDNS announcer.
///
/// Creating it does everything that can fail before listening; ``run()`` serves until cancelled or gracefully shut
/// down (run it in a `ServiceGroup` with the signals to trap).
///
/// ```swift
/// var options = BridgeService.Options(configuration: BridgeServerConfiguration(serverName: "Desk"),
///                                     stateDirectory: StateDirectory.resolve(override: nil))
/// options.discovery = AvahiBackend(logger: logger)
/// let service = try await BridgeService(options: options, logger: logger)
/// try await ServiceGroup(configuration: .init(services: [service], gracefulShutdownSignals: [.sigterm], logger: logger)).run()
/// ```
public struct BridgeService: Service {
    /// What to serve and how.
    public struct Options: Sendable {
        /// The server's settings.
        ///
        /// ``BridgeService`` fills in the authenticator, the upgrade authorizer, the TLS identity and the
        /// pairing session.
        public var configuration: BridgeServerConfiguration
        /// Where the installation id, the token database and the TLS identity are kept.
        public var stateDirectory: URL
        /// Whether phones need a token.
        public var auth: Auth = .token(requireApproval: false)
        /// `--dpop`: whether tokens are bound to the device's key (RFC 9449); with token auth only.
        public var dpop: DPoPMode = .optional
        /// The mDNS backend that advertises the bridge; `nil` to not advertise (phones connect by address).
        public var discovery: (any DiscoveryBackend)? = nil
        /// The version named in the "serving" log line.
        public var version: String = "0.1.0"

        /// Options for `configuration` with its state in `stateDirectory`, token auth, no advertising.
        public init(configuration: BridgeServerConfiguration, stateDirectory: URL) {
            self.configuration = configuration
            self.stateDirectory = stateDirectory
        }
    }

    /// How phones are authenticated.
    public enum Auth: Sendable, Equatable {
        /// Phones pair with the QR code; with `requireApproval`, each new pairing waits for approval on the desktop.
        case token(requireApproval: Bool)
        /// No token: loopback and ``BridgeServerConfiguration/allowedNetworks`` only.
        case none
    }

    /// The installation id published in TXT.
    public let installID: String
    /// The bridge's TLS identity (its pin goes into the QR code).
    public let identity: BridgeIdentity
    /// The pairing session behind the QR code and `/pair`.
    public let pairing: PairingSession
    /// The configuration the server runs with.
    public let configuration: BridgeServerConfiguration
    private let discovery: (any DiscoveryBackend)?
    private let tailnet: TailnetIdentity?
    private let tokenAuth: Bool
    private let version: String
    private let logger: Logger
    private let onListening: @Sendable (_ listening: Listening) async -> Void

    /// What ``BridgeService/init(options:logger:onListening:)``'s `onListening` hears once the server listens.
    public struct Listening: Sendable {
        /// The port bound (the configured one, or the one the system chose for port 0).
        public var port: Int
        /// The pairing session behind the QR code and `/pair`.
        public var pairing: PairingSession
        /// The TLS identity phones meet (its pin is in the QR code; its fingerprint is what a browser shows).
        public var identity: BridgeIdentity
    }

    /// Loads (or makes) the installation id, the token store and the TLS identity, and reads the tailnet name.
    ///
    /// `onListening` hears the bound port, the pairing session and the TLS identity once the server listens
    /// (`oa-bridge serve` prints the pairing code then).
    /// - Throws: ``InstallIdentityError`` when the state directory cannot be used; the token store's and the TLS
    ///   identity's errors.
    public init(
        options: Options, logger: Logger,
        onListening: @escaping @Sendable (_ listening: Listening) async -> Void = { _ in }
    ) async throws {
        installID = try InstallIdentity.load(stateDirectory: options.stateDirectory)
        var configuration = options.configuration
        let tailnet = await TailnetLookup.current(logger: logger)
        // Token expiry, rate limits, DPoP proofs' age and the TLS certificate's validity read the bridge's one clock.
        let tokenClock = TokenClock(configuration.clock)
        let store: TokenStore?
        if case .token(let requireApproval) = options.auth {
            let tokens = try TokenStore(
                directory: options.stateDirectory, configuration: TokenStoreConfiguration(requireApproval: requireApproval),
                clock: tokenClock, logger: logger)
            let authenticator = Authenticator(
                store: tokens, limiter: FailedAuthRateLimiter(clock: tokenClock), dpop: DPoPPolicy(mode: options.dpop, clock: tokenClock),
                logger: logger)
            logger.notice("DPoP (RFC 9449 device-bound tokens)", metadata: ["dpop": "\(options.dpop.rawValue)"])
            configuration.authenticator = authenticator
            configuration.authorizeUpgrade = authenticator.upgradeAuthorizer()
            store = tokens
        } else {
            store = nil
        }
        // Issue 25 item 2 (sessions): the session table survives a restart; an unusable database is moved aside.
        configuration.sessionStore = try BridgeService.openSessionStore(stateDirectory: options.stateDirectory, logger: logger)
        identity = try BridgeService.loadIdentity(
            stateDirectory: options.stateDirectory, tailnet: tailnet, now: configuration.clock.wallTime, logger: logger)
        configuration.tlsIdentity = identity
        // Issue 11 item 6 (tls): the MagicDNS name's certificate from tailscaled, chosen by SNI, renewed while serving.
        configuration.tailscaleCertificates = TailnetLookup.certificates(for: tailnet, clock: configuration.clock)
        if configuration.allowPlaintext {
            logger.warning(
                "PLAINTEXT ALLOWED by the bridge's settings: pairing, tokens and prompts from other machines are accepted without TLS; anyone on the network can read them and drive this desktop's agent with a sniffed token",
                metadata: ["setting": "allow-plaintext"])
        }
        pairing = PairingSession(
            store: store,
            endpoint: .init(
                host: LANAddress.preferred() ?? "127.0.0.1", port: configuration.port, webSocketPath: configuration.path,
                session: UUID().uuidString.lowercased(), name: configuration.serverName,
                fallbacks: tailnet.map { [$0.dnsName] + $0.addresses } ?? [], pin: identity.pin.description),
            clock: tokenClock)
        configuration.pairing = pairing
        if store == nil {
            let networks = configuration.allowedNetworks
            logger.warning(
                "AUTHENTICATION IS OFF in the bridge's settings: any client on loopback\(networks.isEmpty ? "" : " or in " + networks.joined(separator: ", ")) can drive this desktop's agent without pairing",
                metadata: ["setting": "auth"])
        }
        self.configuration = configuration
        self.discovery = options.discovery
        self.tailnet = tailnet
        self.tokenAuth = store != nil
        self.version = options.version
        self.logger = logger
        self.onListening = onListening
    }

    /// Serves, and advertises once listening, until cancelled or gracefully shut down; then withdraws the
    /// advertisement and closes connections.
    ///
    /// Throws ``BridgeServerError`` when it cannot listen.
    public func run() async throws {
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self, bufferingPolicy: .bufferingNewest(1))
        let (configuration, logger, pairing, onListening, identity) = (
            self.configuration, self.logger, self.pairing, self.onListening, self.identity)
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        // TLS and clear text share the port (told apart by the first byte); what crosses the network in clear is
        // what PlaintextPolicy allows, so the line says which scheme phones use and where clear text is accepted.
        let clear = !tokenAuth || configuration.allowPlaintext ? "ws:// and http:// too" : "ws:// and http:// from loopback only"
        let serving = "oa-bridge \(version) serving wss://\(host)"
        let agent = configuration.agentCommand?.joined(separator: " ") ?? "built-in demo agent"
        let auth = tokenAuth ? "token" : "none"
        let server = BridgeServer(configuration: configuration, logger: logger) { boundPort in
            // With port 0 the system chose it: the QR code and `/api/pair/info` must name the one that listens.
            pairing.listening(onPort: boundPort)
            logger.notice("\(serving):\(boundPort)\(configuration.path) and https://\(host):\(boundPort)/app (\(clear); agent: \(agent), auth: \(auth))")
            await onListening(Listening(port: boundPort, pairing: pairing, identity: identity))
            portContinuation.yield(boundPort)
        }
        var services: [any Service] = [server]
        if let discovery {
            services.append(BridgeAnnouncer(
                backend: discovery, listeningPorts: ports, name: configuration.serverName, installID: installID,
                auth: auth, path: configuration.path, tls: true, tailnet: tailnet, logger: logger))
        } else {
            logger.notice("discovery is off in the bridge's settings: phones must connect by address", metadata: ["setting": "discovery"])
        }
        let group = ServiceGroup(configuration: .init(
            services: services.map { .init(service: $0, successTerminationBehavior: .gracefullyShutdownGroup, failureTerminationBehavior: .gracefullyShutdownGroup) },
            logger: logger))
        try await group.run()
    }
}

extension BridgeService {
    /// The names the bridge's certificate carries: the host name (and `<host>.local`), the addresses (link-local ones
    /// left out: they need a zone) and the tailnet's addresses and name.
    public static func identityNames(hostName: String, addresses: [String], tailnet: TailnetIdentity?) -> BridgeIdentityNames {
        let routable = addresses.filter { !$0.lowercased().hasPrefix("fe80") && !$0.hasPrefix("169.254.") }
        return BridgeIdentityNames(hostName: hostName, addresses: routable + (tailnet?.addresses ?? []), tailscaleName: tailnet?.dnsName)
    }

    /// This machine's names for the certificate: its host name, its LAN addresses and the tailnet's name and addresses.
    public static func identityNames(tailnet: TailnetIdentity?) -> BridgeIdentityNames {
        identityNames(hostName: HostName.current, addresses: LANAddress.interfaceAddresses().map(\.address), tailnet: tailnet)
    }

    /// The identity in `stateDirectory` for this machine's names, made on first use; logs what happened and the pin
    /// (never the key).
    static func loadIdentity(stateDirectory: URL, tailnet: TailnetIdentity?, now: Date, logger: Logger) throws -> BridgeIdentity {
        let identity = try BridgeIdentity.loadOrCreate(in: stateDirectory, names: identityNames(tailnet: tailnet), now: now)
        let metadata: Logger.Metadata = [
            "pin": "\(identity.pin)", "names": "\(identity.dnsNames.joined(separator: ","))",
            "expires": "\(ISO8601DateFormatter().string(from: identity.notValidAfter))",
        ]
        switch identity.origin {
        case .created:
            logger.notice("made this bridge's TLS identity (phones get its pin in the QR code)", metadata: metadata)
        case .reissued:
            logger.info("re-issued this bridge's TLS certificate for the same key (the pin is unchanged)", metadata: metadata)
        case .loaded:
            logger.info("TLS identity loaded", metadata: metadata)
        }
        return identity
    }
}
