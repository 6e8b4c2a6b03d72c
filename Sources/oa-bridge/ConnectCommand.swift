import ArgumentParser
import BridgeClient
import BridgeDiscovery
import BridgeServer
import BridgePairing
import BridgeRPC
import BridgeTLS
import Foundation
import Logging

/// `oa-bridge connect`: find a bridge by name, id, address or Tailscale name, and talk to its agent.
struct ConnectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "connect",
        abstract: "Connect to a bridge (mDNS, then manual address, then Tailscale) and prompt its agent.",
        discussion: """
        TARGET is a service name ('Desk'), an install id (TXT 'id'), or an address (host, \
        host:port, [IPv6]:port). Without TARGET, the first bridge found on the LAN is used. \
        An address is tried as given (with any --tailscale names), without browsing.

        Candidates come from three sources, preferred in this order: services discovered over \
        mDNS, the manual address, and the desktop's Tailscale name (--tailscale, or the \
        fallbacks in a --pair payload). They are raced Happy-Eyeballs style: the best starts \
        first, the next 250 ms later (or as soon as one fails), and the first to answer \
        'initialize' wins. Each attempt is printed with its time.

        Examples:
          oa-bridge connect Desk --prompt 'hello'
          oa-bridge connect 192.168.1.20:9099
          oa-bridge connect Desk --tailscale desk.tail1234.ts.net --prompt 'status?'
        """
    )

    @Argument(help: "A service name, install id, or host[:port]. Default: the first bridge found.")
    var target: String?

    @Option(help: "The desktop's Tailscale MagicDNS name or IP, tried when the LAN fails.")
    var tailscale: [String] = []

    @Option(help: "An access token for a bridge that requires pairing (otherwise the saved credentials are used).")
    var token: String?

    @Option(help: "Pair first with what the QR code holds: its URL (https://…/app#…) or the JSON 'oa-bridge pair --json' prints.")
    var pair: String?

    @Option(help: "Where this client keeps its tokens (mode 0600). Default: <state dir>/client/<bridge name or address>.json.")
    var credentials: String?

    @Option(help: "Send this prompt once, stream the answer, and exit.")
    var prompt: String?

    @Option(help: "The directory on the desktop to open the session in. Default: the bridge's working directory.")
    var cwd: String?

    @Flag(help: "Approve the agent's permission requests (default: reject them).")
    var yes = false

    @Flag(help: "Print raw JSON-RPC messages as JSON lines.")
    var json = false

    @Option(help: "Seconds between WebSocket pings; a link that stops answering is detected within twice that, then the client reconnects and resumes.")
    var keepalive: Int = 5

    @Option(help: "The bridge's certificate pin (sha256/…, as 'oa-bridge pair' prints it): connect over wss:// and refuse any other key.")
    var pin: String?

    @Option(help: "Seconds to look for the bridge over mDNS.")
    var browseTime: Double = 3

    @Option(help: "The mDNS implementation: avahi or dnssd.")
    var backend: BackendKind = .platformDefault

    @Option(help: "Log level for diagnostics on stderr.")
    var logLevel: Logger.Level = .warning

    func run() async throws {
        LoggingSetup.bootstrap(level: logLevel, format: .text)
        let logger = Logger(label: "oa-bridge.connect")
        let start = ContinuousClock.now
        let payload = try pair.map { try PairingPayload.decode($0) }
        // Tokens are kept per bridge (by its name or address), so one desktop's token is never sent to another.
        let credentialsKey = ConnectCommand.fileSafe(payload?.name ?? target ?? "default")
        let credentialsFile = credentials.map { URL(fileURLWithPath: $0) }
            ?? StateDirectory.resolve().appendingPathComponent("client/\(credentialsKey).json")
        let vault = TokenVault(file: credentialsFile)
        if let payload, let pairingToken = payload.token {
            let paired = try await vault.pair(
                bridge: payload.http, pairingToken: pairingToken, deviceName: "oa-bridge connect on \(HostName.current)", pin: payload.pin)
            FileHandle.standardError.write(Data("paired with \(payload.name) as device \(paired.tokens.deviceID); tokens saved in \(credentialsFile.path)\n".utf8))
        }
        let finder = try BridgeCandidates(
            target: target, pairing: payload.map { ($0.name, $0.ws, $0.fallbacks) },
            tailscale: tailscale, browseTime: .milliseconds(Int(browseTime * 1_000)))
        let candidates = await finder.collect(backend: try backend.make(logger: logger))
        guard !candidates.isEmpty else {
            throw ValidationError("""
            no bridge found\(target.map { " matching '\($0)'" } ?? "") over mDNS within \(browseTime) s, and no address to try.
            Give an address ('oa-bridge connect HOST:9099') or a Tailscale name (--tailscale NAME); 'oa-bridge discover' shows what is visible.
            """)
        }
        // The pin from --pin, else the QR code's, else the one kept with the tokens: with one, only wss:// to that key.
        let stored = try await vault.pin
        let pin = try (pin ?? payload?.pin).map { try CertificatePin(parsing: $0) } ?? stored
        let options = BridgeSessionOptions(pingInterval: .seconds(keepalive), pin: pin)
        let session = try await BridgeClientSession.connect(
            to: candidates, options: options, token: BridgeClientSession.token(given: token, vault: vault), logger: logger)
        defer { session.close() }
        let connected = session.first
        for attempt in connected.attempts {
            let took = attempt.duration.map { String(format: "%.0f ms", $0 * 1_000) } ?? "-"
            FileHandle.standardError.write(Data("  \(attempt.endpoint.source.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0)) \(attempt.endpoint.url)  started +\(String(format: "%.0f", attempt.startedAt * 1_000)) ms, took \(took): \(attempt.outcome)\n".utf8))
        }
        let total = String(format: "%.0f ms", (ContinuousClock.now - start).inMilliseconds)
        FileHandle.standardError.write(Data("connected to \(connected.endpoint.url) via \(connected.endpoint.source.rawValue) in \(total) (\(connected.agentTitle ?? "agent"))\n".utf8))
        if json { print(JSONRPCMessage.response(JSONRPCResponse(id: .int(1), result: connected.initialize)).jsonText) }

        // The session runs on the desktop: default to the directory the bridge serves.
        guard let directory = cwd ?? connected.workingDirectory else {
            throw ValidationError("the bridge did not say its working directory; pass --cwd DIR (a directory on the desktop)")
        }
        let prompter = ConnectSession(session: session, json: json, approve: yes, cwd: directory)
        if let prompt {
            try await prompter.runOnce(prompt)
        } else {
            try await prompter.runInteractive()
        }
    }
}

extension ConnectCommand {
    /// A name usable as a file name: letters, digits, '.', '-', '_' kept, the rest '_'.
    static func fileSafe(_ text: String) -> String {
        String(text.map { $0.isLetter || $0.isNumber || "._-".contains($0) ? $0 : "_" })
    }
}
