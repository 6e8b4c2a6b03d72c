import BridgeDiscovery
import Foundation
import HummingbirdWSClient
import Logging
import Synchronization

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
    }

    /// How long one probe may take before it counts as failed.
    public var timeout: Duration
    /// The bearer token to present, if the bridge wants one.
    public var token: String?
    private let logger: Logger

    /// Creates a probe.
    public init(timeout: Duration = .seconds(3), token: String? = nil, logger: Logger = Logger(label: "oa-bridge.probe")) {
        self.timeout = timeout
        self.token = token
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

    /// Probes `service` at each candidate address until one answers.
    public func probe(_ service: ResolvedService) async -> Result {
        var last = Result(ok: false, url: "", milliseconds: 0, error: "the service has no address")
        for url in HandshakeProbe.candidateURLs(for: service) {
            last = await probe(url: url)
            if last.ok { return last }
        }
        return last
    }

    /// Probes one URL.
    public func probe(url: String) async -> Result {
        let start = ContinuousClock.now
        do {
            try WebSocketURLSupport.check(url)
        } catch {
            return Result(ok: false, url: url, milliseconds: 0, error: error.description)
        }
        let logger = self.logger
        let timeout = self.timeout
        let configuration = HandshakeProbe.configuration(token: token)
        do {
            let answer = try await withThrowingTaskGroup(of: String?.self) { group in
                group.addTask {
                    let box = AnswerBox()
                    try await WebSocketClient.connect(url: url, configuration: configuration, logger: logger) { inbound, outbound, _ in
                        try await outbound.write(.text(HandshakeProbe.initializeRequest))
                        for try await message in inbound.messages(maxSize: 1 << 20) {
                            if case .text(let text) = message {
                                box.value = text
                                break
                            }
                        }
                        try await outbound.close(.normalClosure, reason: "probe done")
                    }
                    return box.value
                }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    throw ProbeTimeout()
                }
                defer { group.cancelAll() }
                return try await group.next() ?? nil
            }
            let elapsed = HandshakeProbe.milliseconds(since: start)
            guard let answer else {
                return Result(ok: false, url: url, milliseconds: elapsed, error: "the connection closed before initialize was answered")
            }
            return HandshakeProbe.evaluate(answer: answer, url: url, milliseconds: elapsed)
        } catch is ProbeTimeout {
            return Result(ok: false, url: url, milliseconds: HandshakeProbe.milliseconds(since: start), error: "no answer within \(timeout)")
        } catch {
            return Result(ok: false, url: url, milliseconds: HandshakeProbe.milliseconds(since: start), error: "\(error)")
        }
    }

    /// The seed-dialect `initialize` request a phone sends first.
    public static let initializeRequest = #"{"jsonrpc":"2.0","method":"initialize","id":"probe-1","params":{"protocol_version":"0.2.2","client_capabilities":{},"client_info":{"name":"oa-bridge-probe","title":"oa-bridge discover --probe","version":"0.1.0"}}}"#

    static func evaluate(answer: String, url: String, milliseconds: Double) -> Result {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(answer.utf8))) as? [String: Any] else {
            return Result(ok: false, url: url, milliseconds: milliseconds, error: "the answer is not a JSON object")
        }
        if let error = object["error"] as? [String: Any] {
            let message = error["message"] as? String ?? "unknown error"
            return Result(ok: false, url: url, milliseconds: milliseconds, error: "initialize failed: \(message)")
        }
        guard let result = object["result"] as? [String: Any] else {
            return Result(ok: false, url: url, milliseconds: milliseconds, error: "the answer has neither result nor error")
        }
        let version = (result["protocol_version"] as? String) ?? (result["protocolVersion"]).map { "\($0)" }
        let info = (result["agent_info"] ?? result["agentInfo"]) as? [String: Any]
        let agent = info?.compactMapValues { $0 as? String }
        return Result(ok: true, url: url, milliseconds: milliseconds, protocolVersion: version, agent: agent, error: nil)
    }

    static func configuration(token: String?) -> WebSocketClientConfiguration {
        var configuration = WebSocketClientConfiguration()
        if let token {
            configuration.additionalHeaders[.authorization] = "Bearer \(token)"
        }
        return configuration
    }

    static func milliseconds(since start: ContinuousClock.Instant) -> Double {
        (ContinuousClock.now - start).inMilliseconds
    }
}

/// Thrown inside the probe when its time is up.
private struct ProbeTimeout: Error {}

/// Carries the first text frame out of the WebSocket handler (which runs in another task).
private final class AnswerBox: Sendable {
    private let text = Mutex<String?>(nil)

    /// The first text frame, once the handler has seen it.
    var value: String? {
        get { text.withLock { $0 } }
        set { text.withLock { $0 = newValue } }
    }
}
