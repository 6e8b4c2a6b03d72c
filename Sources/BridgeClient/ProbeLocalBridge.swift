import BridgeDiscovery
public import BridgeTime
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What `oa-bridge doctor` learns about the bridge on this machine without a token: `GET /api/health` over loopback
/// says whether it runs, and `GET /api/status` without a token says its auth mode (`200` with `"auth"` when auth is
/// off, `401`/`403` when it wants tokens).
public struct ProbeLocalBridge: Sendable {
    /// The bridge's auth mode as seen from loopback.
    public enum Auth: String, Sendable, Hashable, Codable {
        /// Phones need a token (pairing).
        case token
        /// `--auth none`.
        case none
    }

    /// What the check found.
    public struct Finding: Sendable, Hashable {
        /// The health URL that answered, or the last one tried.
        public var url: String
        /// Whether `/api/health` answered `200`.
        public var running: Bool
        /// The auth mode, when the bridge runs and `/api/status` told it.
        public var auth: Auth?
        /// Milliseconds until `/api/health` answered (or failed).
        public var ms: Double
        /// Why nothing answered, in words.
        public var error: String?
    }

    /// The port to look at.
    public var port: Int
    /// How long each request may take.
    public var timeout: Duration
    /// The clock the answer's milliseconds are measured on.
    public var clock: any BridgeClock

    /// Creates a check of `port` on this machine.
    public init(port: Int = BridgeEndpoint.defaultPort, timeout: Duration = .seconds(2), clock: any BridgeClock = ContinuousClock()) {
        self.port = port
        self.timeout = timeout
        self.clock = clock
    }

    /// Asks `127.0.0.1`, then `[::1]` (a bridge bound to IPv6 loopback only).
    public func check() async -> Finding {
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        var last = Finding(url: "", running: false, ms: 0)
        for host in ["127.0.0.1", "[::1]"] {
            let base = "http://\(host):\(port)"
            let start = clock.now
            let health = await get(base + "/api/health", session: session)
            last = Finding(url: base + "/api/health", running: health.status == 200,
                           ms: (clock.now - start).inMilliseconds, error: health.error)
            if health.status != 200 && health.error == nil { last.error = "/api/health answered HTTP \(health.status)" }
            guard last.running else { continue }
            let status = await get(base + "/api/status", session: session)
            switch status.status {
            case 200:
                let auth = (try? JSONSerialization.jsonObject(with: status.body)) as? [String: Any]
                last.auth = (auth?["auth"] as? String).flatMap(Auth.init(rawValue:))
            case 401, 403:
                last.auth = .token
            default:
                break
            }
            return last
        }
        return last
    }

    private func get(_ url: String, session: URLSession) async -> (status: Int, body: Data, error: String?) {
        guard let target = URL(string: url) else { return (0, Data(), "not a URL: \(url)") }
        var request = URLRequest(url: target)
        request.timeoutInterval = timeout.inSeconds
        do {
            let (data, response) = try await session.data(for: request)
            return ((response as? HTTPURLResponse)?.statusCode ?? 0, data, nil)
        } catch {
            return (0, Data(), error.localizedDescription)
        }
    }
}
