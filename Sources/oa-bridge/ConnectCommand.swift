import ArgumentParser
import BridgeClient
import BridgeConfig
import BridgeDiscovery
import BridgeHTTP
import BridgePairing
import BridgeRPC
import BridgeServer
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
        host:port, [IPv6]:port). Without TARGET, the bridge used last is used (else the first \
        one found on the LAN). An address is tried as given (with any --tailscale names), \
        without browsing.

        The bridges this client paired with are kept in <state dir>/client/bridges.json by their \
        identity (the certificate pin): their credentials are found whatever name or address is \
        typed (an address never used before is recognised by the pin it presents), and when \
        mDNS finds nothing the addresses a bridge answered on before and its Tailscale names are \
        tried. Everything the agent or the bridge sends is shown with its control characters \
        escaped (^[, <U+202E>), so it cannot retitle, clear or write the clipboard of this terminal.

        Candidates come from three sources, preferred in this order: services discovered over \
        mDNS, the manual address, and the desktop's Tailscale name (--tailscale, or the \
        fallbacks in a --pair payload). They are raced Happy-Eyeballs style: the best starts \
        first, the next 250 ms later (or as soon as one fails), and the first to answer \
        'initialize' wins. Each attempt is printed with its time.

        Examples:
          oa-bridge connect Desk --prompt 'hello'
          oa-bridge connect 192.168.1.20:9099
          oa-bridge connect Desk --tailscale desk.tail1234.ts.net --prompt 'status?'
          oa-bridge connect --stdio Desk        (an editor's agent command: ACP on stdin/stdout)

        --stdio makes this an ACP agent for an editor (Zed, JetBrains, Toad): it speaks ACP on \
        stdin and stdout, relays every message to the bridge's /acp endpoint and back as it is \
        (the editor's initialize too), and mends a dropped link without the editor noticing \
        (reconnect, resume the editor's sessions, no update twice). Only ACP goes to stdout; \
        what it reports goes to stderr.
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

    @Option(help: "Where this client keeps its tokens (mode 0600). Default: the saved bridge's file in <state dir>/client/ (see bridges.json there).")
    var credentials: String?

    @Option(help: "The state directory, where <state dir>/client/ keeps the bridges this client paired with. Default: $XDG_STATE_HOME/oa-bridge or ~/.local/state/oa-bridge.")
    var stateDir: String?

    @Option(help: "Send this prompt once, stream the answer, and exit.")
    var prompt: String?

    @Option(help: "The directory on the desktop to open the session in. Default: the bridge's working directory.")
    var cwd: String?

    @Flag(help: "Be an ACP agent on stdin/stdout for an editor: relay ACP to the bridge's /acp and back, reconnecting and resuming on a lost link.")
    var stdio = false

    @Flag(help: "Approve the agent's permission requests (default: reject them).")
    var yes = false

    @Flag(help: "Print raw JSON-RPC messages as JSON lines.")
    var json = false

    @Option(help: "Seconds between WebSocket pings; a link that stops answering is detected within twice that, then the client reconnects and resumes.")
    var keepalive: Int = 5

    @Option(help: "Reconnect attempts after a lost connection before giving up with an error (backoff up to 10 s apart).")
    var retries: Int = 10

    @Option(help: "The bridge's certificate pin (sha256/…, as 'oa-bridge pair' prints it): connect over wss:// and refuse any other key.")
    var pin: String?

    @Option(help: "Seconds to look for the bridge over mDNS.")
    var browseTime: Double = 3

    @Option(help: "The mDNS implementation: avahi or dnssd.")
    var backend: BackendKind = .platformDefault

    @Option(help: "Log level for diagnostics on stderr.")
    var logLevel: Logger.Level = .warning

    func validate() throws {
        if stdio, prompt != nil || json || yes || cwd != nil {
            throw ValidationError("--stdio relays the editor's ACP messages: --prompt, --json, --yes and --cwd are the editor's to choose")
        }
    }

    func run() async throws {
        LoggingSetup.bootstrap(level: logLevel, format: .text)
        let logger = Logger(label: "oa-bridge.connect")
        let start = ContinuousClock.now
        // A short link (issue 29 item 2) holds the address, the code and a pin prefix: the rest is asked first.
        let payload = try await pair.map { try PairingPayload.decode($0) }?.completed(logger: logger)
        // The bridges this client knows, by identity (pin), names and addresses: found whatever the user typed.
        let saved = SavedBridges(directory: StateDirectory.resolve(override: stateDir).appendingPathComponent("client"))
        var known: SavedBridges.Bridge?
        do {
            _ = try saved.load()
        } catch {
            FileHandle.standardError.write(Data("warning: \(saved.directory.path)/bridges.json cannot be read (\(error)); it is left as it is, and no bridge is saved until it is moved aside\n".utf8))
        }
        if payload == nil {
            known = saved.find(target: target)
            if known == nil, !saved.all.isEmpty, let target, BridgeCandidates.looksLikeAddress(target) {
                known = await saved.identify(address: target, logger: logger)
            }
        }
        // Tokens are kept per bridge, so one desktop's token is never sent to another.
        let credentialsFile: URL
        if let credentials {
            credentialsFile = URL(fileURLWithPath: credentials)
        } else if let payload {
            // Named after the bridge (as before bridges.json), unless another bridge of that name has that file.
            let byName = "\(ConnectCommand.fileSafe(payload.name)).json"
            let taken = saved.all.contains { $0.credentials == byName && $0.pin != nil && $0.pin != payload.pin }
            credentialsFile = saved.directory.appendingPathComponent(taken ? SavedBridges.credentialsName(id: payload.pin ?? payload.name) : byName)
        } else if let known {
            credentialsFile = saved.credentialsFile(for: known)
        } else {
            // Before bridges.json: a file named after what the user typed.
            credentialsFile = saved.directory.appendingPathComponent("\(ConnectCommand.fileSafe(target ?? "default")).json")
        }
        let vault = TokenVault(file: credentialsFile)
        // A saved bridge holds this client to its pin only while it is paired with it (its credentials are there): a
        // bridge seen once without pairing, or whose tokens were deleted, is not a pairing to keep.
        let haveCredentials = await vault.current != nil
        let pairedWithKnown = payload == nil && credentials == nil && known != nil && haveCredentials
        if pairedWithKnown, let known {
            FileHandle.standardError.write(Data("using the saved bridge '\(TerminalText.escapedLine(known.name))'\(known.pin.map { " (\($0))" } ?? "")\n".utf8))
        }
        if let payload, let pairingToken = payload.token {
            let paired = try await vault.pair(
                bridge: payload.http, pairingToken: pairingToken, deviceName: "oa-bridge connect on \(HostName.current)", pin: payload.pin)
            FileHandle.standardError.write(Data("paired with \(TerminalText.escapedLine(payload.name)) as device \(paired.tokens.deviceID); tokens saved in \(credentialsFile.path)\n".utf8))
            do {
                try saved.remember(
                    name: payload.name, pin: try paired.pin.map { try CertificatePin(parsing: $0) }, address: payload.ws,
                    tailscale: payload.fallbacks, credentials: ConnectCommand.name(of: credentialsFile, in: saved.directory))
            } catch {
                logger.warning("could not save the bridge in \(saved.directory.path)", metadata: ["error": "\(error)"])
            }
        }
        let targetIsAddress = target.map(BridgeCandidates.looksLikeAddress) ?? false
        var finder = try BridgeCandidates(
            target: target ?? known?.name, pairing: payload.map { ($0.name, $0.ws, $0.fallbacks) },
            tailscale: tailscale + (targetIsAddress ? [] : known?.tailscale ?? []), browseTime: .milliseconds(Int(browseTime * 1_000)))
        if let known, !targetIsAddress {
            // With mDNS down (or another subnet) the addresses it answered on before still reach it.
            // A Tailscale name stays a Tailscale candidate: it is tried (and reported) as one, not as an address.
            let tailnetNames = Set((tailscale + known.tailscale).map { $0.lowercased() })
            for address in known.addresses {
                guard let endpoint = try? BridgeEndpoint.manual(address), !finder.manual.contains(where: { $0.url == endpoint.url }),
                      !tailnetNames.contains(endpoint.host.lowercased())
                else { continue }
                finder.manual.append(endpoint)
            }
        }
        let candidates = await finder.collect(backend: try backend.make(logger: logger))
        let nothingFound = """
            no bridge found\(target.map { " matching '\($0)'" } ?? "") over mDNS within \(browseTime) s, and no address to try.
            Give an address ('oa-bridge connect HOST:9099') or a Tailscale name (--tailscale NAME); 'oa-bridge discover' shows what is visible.
            """
        // An editor's agent answers initialize even then: the editor shows why.
        guard !candidates.isEmpty || stdio else { throw ValidationError(nothingFound) }
        // The pin from --pin, else the QR code's, else the one kept with the tokens or the saved bridge's: with one,
        // only wss:// to that key.
        let stored = try await vault.pin
        let pin = try (pin ?? payload?.pin ?? (pairedWithKnown ? known?.pin : nil)).map { try CertificatePin(parsing: $0) } ?? stored
        let options = BridgeSessionOptions(
            pingInterval: .seconds(keepalive), reconnectPolicy: ReconnectPolicy(maximumDelay: .seconds(10), maximumAttempts: max(0, retries)), pin: pin)
        if stdio {
            let remember: @Sendable (BridgeEndpoint, CertificatePin?) async -> Void = { [tailscale, known] relayed, presented in
                var endpoint = relayed
                endpoint.path = "/"  // kept as 'connect' keeps it; the relay adds /acp
                let name = payload?.name ?? known?.name ?? (targetIsAddress ? nil : target) ?? endpoint.host
                do {
                    try saved.remember(
                        name: name, pin: pin ?? presented, address: endpoint.source == .tailscale ? nil : endpoint.url,
                        tailscale: tailscale + (payload?.fallbacks ?? []),
                        credentials: await vault.current == nil ? nil : ConnectCommand.name(of: credentialsFile, in: saved.directory))
                } catch {
                    logger.warning("could not save the bridge in \(saved.directory.path)", metadata: ["error": "\(error)"])
                }
            }
            await ConnectStdio(
                candidates: candidates, options: options, credential: BridgeClientSession.credential(given: token, vault: vault),
                refresh: BridgeClientSession.refresh(given: token, vault: vault), nothingFound: nothingFound, logger: logger, remember: remember
            ).run()
            return
        }
        let session = try await BridgeClientSession.connect(
            to: candidates, options: options, credential: BridgeClientSession.credential(given: token, vault: vault),
            refresh: BridgeClientSession.refresh(given: token, vault: vault), logger: logger)
        defer { session.close() }
        let connected = session.first
        // Remember where it answered, under its identity (the pin it presented), for plain 'connect' next time.
        let name = payload?.name ?? known?.name ?? (targetIsAddress ? nil : target) ?? connected.endpoint.host
        do {
            try saved.remember(
                name: name, pin: pin ?? connected.client.connection.certificatePin,
                address: connected.endpoint.source == .tailscale ? nil : connected.endpoint.url,
                tailscale: tailscale + (payload?.fallbacks ?? []),
                credentials: await vault.current == nil ? nil : ConnectCommand.name(of: credentialsFile, in: saved.directory))
        } catch {
            logger.warning("could not save the bridge in \(saved.directory.path)", metadata: ["error": "\(error)"])
        }
        for attempt in connected.attempts {
            let took = attempt.duration.map { String(format: "%.0f ms", $0 * 1_000) } ?? "-"
            FileHandle.standardError.write(Data("  \(attempt.endpoint.source.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0)) \(attempt.endpoint.url)  started +\(String(format: "%.0f", attempt.startedAt * 1_000)) ms, took \(took): \(attempt.outcome)\n".utf8))
        }
        let total = String(format: "%.0f ms", (ContinuousClock.now - start).inMilliseconds)
        FileHandle.standardError.write(Data("connected to \(connected.endpoint.url) via \(connected.endpoint.source.rawValue) in \(total) (\(connected.agentTitle ?? "agent"))\n".utf8))
        if json { print(TerminalText.jsonSafe(JSONRPCMessage.response(JSONRPCResponse(id: .int(1), result: connected.initialize)).jsonText)) }

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

    /// The file's name when it lies in `directory` (bridges.json names credentials relative to it), else `nil`.
    static func name(of file: URL, in directory: URL) -> String? {
        file.deletingLastPathComponent().standardizedFileURL.path == directory.standardizedFileURL.path ? file.lastPathComponent : nil
    }
}
