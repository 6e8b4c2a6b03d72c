import BridgePairing
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Prometheus
import Testing
@testable import BridgeHTTP
@testable import BridgeServer

/// Authentication follows routes, not path strings (issue 16 item 6), and the loopback-only routes check `Host`
/// (DNS rebinding), through the bridge's own router (``BridgeHTTPRouter``) served by HummingbirdTesting.
@Suite("HTTP routing: auth by route on normalised paths, loopback Host checks", .tags(.loopback))
struct HTTPRoutingTests {
    struct Fixture {
        let client: any TestClientProtocol
        let accessToken: String
        let router: Router<BridgeRequestContext>
    }

    static func withBridgeRoutes(_ body: @escaping @Sendable (Fixture) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("oa-bridge-routing-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var logger = Logger(label: "test.http-routing")
        logger.logLevel = .critical
        let store = try TokenStore(directory: directory, configuration: TokenStoreConfiguration(), logger: logger)
        let pairing = try await store.issuePairingToken()
        guard case .paired(let session) = try await store.exchange(pairingToken: pairing.token) else {
            throw LoopbackHTTP.Failure(message: "expected tokens")
        }
        var configuration = BridgeServerConfiguration(serverName: "desk")
        configuration.authenticator = Authenticator(store: store)
        configuration.pairing = PairingSession(store: store, endpoint: .init(host: "192.0.2.2", session: "session-1", name: "desk"))
        configuration.metricsRegistry = PrometheusCollectorRegistry()
        let http = BridgeHTTPRouter(configuration: configuration, gate: nil, started: Date(), logger: logger)
        let app = Application(responder: http.responder(), logger: logger)
        let token = session.accessToken.token
        try await app.test(.live) { client in
            try await body(Fixture(client: client, accessToken: token, router: http.router))
        }
    }

    static let spellings = [
        "/api/status", "//api/status", "/./api/status", "/%61pi/status", "/api/../api/status", "/api//status",
        "/%2e/api/status", "/x/../api/status", "/api/status/",
    ]

    @Test("every spelling of /api/status needs a token, and works with one", arguments: spellings)
    func spellingsNeedAToken(path: String) async throws {
        try await Self.withBridgeRoutes { fixture in
            let anonymous = try await fixture.client.execute(uri: path, method: .get)
            #expect(anonymous.status == .unauthorized, "\(path) answered \(anonymous.status) without a token")
            #expect(String(buffer: anonymous.body).contains("missing_token"))
            let authorized = try await fixture.client.execute(
                uri: path, method: .get, headers: [.authorization: "Bearer \(fixture.accessToken)"])
            #expect(authorized.status == .ok, "\(path) answered \(authorized.status) with a token")
        }
    }

    @Test("every /api route of the bridge other than the open ones refuses a request without a token")
    func protectedByConstruction() async throws {
        try await Self.withBridgeRoutes { fixture in
            let open: Set<String> = ["/api/health", "/api/auth/exchange", "/api/auth/refresh"]
            let routes = fixture.router.routes.filter {
                $0.path.description.hasPrefix("/api/") && !$0.path.description.hasPrefix("/api/pair/")
                    && !open.contains($0.path.description)
            }
            #expect(!routes.isEmpty)
            for route in routes {
                let response = try await fixture.client.execute(uri: route.path.description, method: route.method)
                #expect(response.status == .unauthorized, "\(route.method) \(route.path) answered \(response.status) without a token")
            }
            #expect(try await fixture.client.execute(uri: "/%61pi/health", method: .get).status == .ok)
        }
    }

    @Test("/metrics and the pairing API answer loopback Host names only (DNS rebinding)", arguments: ["/metrics", "/api/pair/info"])
    func loopbackHostOnly(path: String) async throws {
        try await Self.withBridgeRoutes { fixture in
            #expect(try await fixture.client.execute(uri: path, method: .get).status == .ok)
            let port = try #require(fixture.client.port)
            for authority in ["rebind.evil.example:\(port)", "192.0.2.7", "localhost.evil.example"] {
                let response = try await HummingbirdTesting.TestClient.withClient(host: "localhost", port: port) { client in
                    try await client.execute(HummingbirdTesting.TestClient.Request(path, method: .get, authority: authority))
                }
                #expect(response.status == .forbidden, "\(path) with Host \(authority) answered \(response.status)")
                #expect(String(buffer: response.body ?? ByteBuffer()).contains("loopback_only"))
            }
            let crossSite = try await fixture.client.execute(uri: path, method: .get, headers: [.origin: "http://evil.example"])
            #expect(crossSite.status == .forbidden)
        }
    }
}
