public import BridgeDiscovery
import Foundation
public import Logging

/// Connects to a bridge over WebSocket and runs the `initialize` handshake once, timing it:
/// the "is it really a bridge, and does it answer" check behind `oa-bridge discover --probe`.
public struct HandshakeProbe: Sendable {
    /// What one probe found.
    public struct Result: Sendable, Hashable, Codable {
        /// Whether `initialize` was answered with a result.
        public var ok: Bool
        /// The URL that was probed.
        public var url: String
        /// Milliseconds from starting the connection to the `initialize` answer (or the failure).
        public var milliseconds: Double
        /// The protocol version the bridge answered with, if any.
        public var protocolVersion: String?
        /// The agent's `agent_info` (`name`, `title`, `version`), if any.
        public var agent: [String: String]?
        /// Why the probe failed, in words.
        public var error: String?
        /// How it ended (`answered`, `needs_pairing`, `refused`, …): for a service, the best outcome of its addresses.
        public var outcome: ProbeOutcome?
        /// For a service: every address tried, in order, with its outcome.
        public var probes: [ProbeAttempt]?

        /// A result from one address's attempt (and, for a service, every attempt).
        init(_ attempt: ProbeAttempt, probes: [ProbeAttempt]? = nil) {
            self.ok = attempt.outcome == .answered
            self.url = attempt.url
            self.milliseconds = attempt.ms
            self.protocolVersion = attempt.protocolVersion
            self.agent = attempt.agent
            self.error = attempt.error
            self.outcome = attempt.outcome
            self.probes = probes
        }

        init(ok: Bool, url: String, milliseconds: Double, protocolVersion: String? = nil, agent: [String: String]? = nil, error: String?) {
            self.ok = ok
            self.url = url
            self.milliseconds = milliseconds
            self.protocolVersion = protocolVersion
            self.agent = agent
            self.error = error
        }
    }

    /// How long one probe may take before it counts as failed.
    public var timeout: Duration
    /// What to present, if the bridge wants a token (a bearer token, or one bound to this client's DPoP key).
    public var credential: BridgeCredential?
    private let logger: Logger

    /// Creates a probe.
    public init(timeout: Duration = .seconds(3), credential: BridgeCredential? = nil, logger: Logger = Logger(label: "oa-bridge.probe")) {
        self.timeout = timeout
        self.credential = credential
        self.logger = logger
    }

    /// The WebSocket URLs to try for `service`, best first: IPv4, then global IPv6, then link-local IPv6.
    public static func candidateURLs(for service: ResolvedService) -> [String] {
        let path = service.txt["path"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/"
        let ordered = service.addresses.filter { $0.family == .ipv4 }
            + service.addresses.filter { $0.family == .ipv6 && !$0.isLinkLocal }
            + service.addresses.filter { $0.isLinkLocal }
        return ordered.map { "ws://\($0.urlHost):\(service.port)\(path)" }
    }

    /// Probes every address of `service` (``ProbeRunner``): the result is the best attempt, with all of them in
    /// ``Result/probes``.
    public func probe(_ service: ResolvedService) async -> Result {
        let report = await ProbeRunner(timeout: timeout, credential: credential, logger: logger).probe(service)
        guard let best = report.best else {
            return Result(ok: false, url: "", milliseconds: 0, error: "the service has no address")
        }
        return Result(best, probes: report.probes)
    }

    /// Probes one URL: IPv4, a name, or an IPv6 address in brackets with its zone.
    public func probe(url: String) async -> Result {
        Result(await ProbeRunner(timeout: timeout, credential: credential, logger: logger).probe(url: url))
    }

    /// The seed-dialect `initialize` request a phone sends first.
    public static let initializeRequest = #"{"jsonrpc":"2.0","method":"initialize","id":"probe-1","params":{"protocol_version":"0.2.2","client_capabilities":{},"client_info":{"name":"oa-bridge-probe","title":"oa-bridge discover --probe","version":"0.1.0"}}}"#
}
