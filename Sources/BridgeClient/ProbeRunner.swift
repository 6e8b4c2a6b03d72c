public import BridgeDiscovery
import BridgeRPC
public import BridgeTLS
public import BridgeTime
public import Logging

/// Probes a bridge the way a phone would reach it: a WebSocket to each address and the `initialize` handshake,
/// and says per address what came back (``ProbeOutcome``).
///
/// Behind `oa-bridge discover --probe`.
///
/// A `401`/`403` to the upgrade is `needs_pairing`: the bridge is there and wants a token. A `ws://` attempt the
/// bridge refuses with `tls_required` is tried again over `wss://`, trusting the certificate on first use (the
/// attempt reports the pin seen).
public struct ProbeRunner: Sendable {
    /// How long one address may take: TCP, TLS, the upgrade and the `initialize` answer.
    public var timeout: Duration
    /// What to present (a bearer token, or one bound to this client's DPoP key), if anything.
    public var credential: BridgeCredential?
    /// The pin to hold a `wss://` bridge to; `nil` trusts the certificate it presents (and reports its pin).
    public var pin: CertificatePin?
    /// The clock an attempt is timed on (its ``timeout`` for the `initialize` answer, the milliseconds it reports).
    public var clock: any BridgeClock
    private let logger: Logger

    /// The most addresses of one service probed at once.
    static let maxConcurrent = 8

    /// Creates a prober.
    public init(
        timeout: Duration = .seconds(3), credential: BridgeCredential? = nil, pin: CertificatePin? = nil,
        clock: any BridgeClock = ContinuousClock(), logger: Logger = Logger(label: "oa-bridge.probe")
    ) {
        self.timeout = timeout
        self.credential = credential
        self.pin = pin
        self.clock = clock
        self.logger = logger
    }

    /// The WebSocket URLs of `service`, one per address, best first (IPv4, global IPv6, link-local IPv6 with its
    /// zone); `wss://` when its TXT says `tls=1`.
    public static func candidateURLs(for service: ResolvedService) -> [String] {
        let path = service.txt["path"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/"
        let scheme = service.txt["tls"] == "1" ? "wss" : "ws"
        let ordered = service.addresses.filter { $0.family == .ipv4 }
            + service.addresses.filter { $0.family == .ipv6 && !$0.isLinkLocal }
            + service.addresses.filter { $0.isLinkLocal }
        var seen = Set<String>()
        return ordered.map { "\(scheme)://\($0.urlHost):\(service.port)\(path)" }.filter { seen.insert($0).inserted }
    }

    /// Probes every address of `service` at once (up to `maxConcurrent` at a time); the report keeps their order.
    public func probe(_ service: ResolvedService) async -> ProbeReport {
        let urls = ProbeRunner.candidateURLs(for: service)
        var results = [ProbeAttempt?](repeating: nil, count: urls.count)
        await withTaskGroup(of: (Int, ProbeAttempt).self) { group in
            var next = 0
            func launch() {
                let index = next
                next += 1
                group.addTask { (index, await self.probe(url: urls[index])) }
            }
            while next < min(urls.count, ProbeRunner.maxConcurrent) { launch() }
            while let (index, attempt) = await group.next() {
                results[index] = attempt
                if next < urls.count { launch() }
            }
        }
        return ProbeReport(probes: results.compactMap { $0 })
    }

    /// Probes one URL.
    public func probe(url: String) async -> ProbeAttempt {
        let target: WebSocketConnector.Target
        do {
            target = try WebSocketConnector.Target(url: url)
        } catch {
            return ProbeAttempt(address: url, url: url, outcome: .error, ms: 0, error: error.description)
        }
        let first = await attempt(target)
        guard !target.isSecure, first.wantsTLS else { return first }
        logger.debug("probe: the bridge wants TLS, trying wss://", metadata: ["address": "\(target.displayAddress)"])
        var secure = target
        secure.isSecure = true
        return await attempt(secure)
    }

    /// One connection and `initialize`, all within ``timeout``.
    private func attempt(_ target: WebSocketConnector.Target) async -> ProbeAttempt {
        let clock = self.clock
        let start = clock.now
        let connector = WebSocketConnector(timeout: timeout, maxMessageSize: 1 << 20, logger: logger)
        let deadline = start + timeout
        let elapsed = { (clock.now - start).inMilliseconds }
        var result = ProbeAttempt(address: target.host, url: target.url, outcome: .error, ms: 0)
        do {
            let (answer, pin) = try await connector.connect(to: target, pin: pin, credential: credential) { connection in
                try await connection.send(text: HandshakeProbe.initializeRequest)
                let answer = try await ProbeRunner.firstText(connection, until: deadline, on: clock)
                return (answer, connection.certificatePin)
            }
            result.ms = elapsed()
            result.pin = pin?.description
            ProbeRunner.evaluate(answer, into: &result)
        } catch let error as WebSocketConnectorError {
            result.ms = elapsed()
            result.outcome = ProbeOutcome(error)
            result.error = error.description
            if case .tlsRequired = error { result.wantsTLS = true }
        } catch is ProbeRunnerTimeout {
            result.ms = elapsed()
            result.outcome = .timeout
            result.error = "the WebSocket opened but initialize was not answered within \(timeout)"
        } catch {
            result.ms = elapsed()
            result.error = "\(error)"
        }
        return result
    }

    /// The first text message, or ``ProbeRunnerTimeout`` at `deadline` of `clock`.
    static func firstText(
        _ connection: WebSocketConnector.Connection, until deadline: ContinuousClock.Instant, on clock: any BridgeClock
    ) async throws -> String {
        try await withThrowingTaskGroup(of: String.self) { group in
            group.addTask {
                for try await message in connection.messages {
                    if case .text(let text) = message { return text }
                }
                throw WebSocketConnectorError.protocolViolation("the connection closed before initialize was answered")
            }
            group.addTask {
                try await clock.sleep(until: deadline, tolerance: nil)
                throw ProbeRunnerTimeout()
            }
            defer { group.cancelAll() }
            guard let text = try await group.next() else { throw ProbeRunnerTimeout() }
            return text
        }
    }

    /// Reads an `initialize` answer: a result is `answered` with the protocol version and agent; an error is `error`.
    static func evaluate(_ answer: String, into result: inout ProbeAttempt) {
        guard let value = try? JSONValue(parsing: answer), value.objectValue != nil else {
            result.error = "the answer to initialize is not a JSON object"
            return
        }
        if let error = value["error"] {
            result.error = "initialize failed: \(error["message"]?.stringValue ?? "unknown error")"
            return
        }
        guard let answered = value["result"] else {
            result.error = "the answer to initialize has neither result nor error"
            return
        }
        result.outcome = .answered
        let version = answered["protocol_version"] ?? answered["protocolVersion"]
        result.protocolVersion = version?.stringValue ?? version.map { $0.jsonText }
        let info = answered["agent_info"] ?? answered["agentInfo"]
        result.agent = info?.objectValue?.compactMapValues(\.stringValue)
    }
}

/// Thrown inside a probe when `initialize` was not answered in time.
struct ProbeRunnerTimeout: Error {}
