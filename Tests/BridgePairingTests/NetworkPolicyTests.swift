import BridgePairing
import BridgePairingUI
import BridgeTestKit
import Foundation
import Testing

@Suite("Network policy", .tags(.unit))
struct NetworkPolicyTests {
    @Test("peer addresses reduce to the host used as rate-limit key")
    func hostOfRemoteAddress() {
        #expect(NetworkPolicy.host(fromRemoteAddress: "192.168.1.20:51234") == "192.168.1.20")
        #expect(NetworkPolicy.host(fromRemoteAddress: "192.168.1.20") == "192.168.1.20")
        #expect(NetworkPolicy.host(fromRemoteAddress: "[fd00::1]:443") == "fd00::1")
        #expect(NetworkPolicy.host(fromRemoteAddress: "fe80::1%eth0") == "fe80::1")
        #expect(NetworkPolicy.host(fromRemoteAddress: "::ffff:10.0.0.1") == "10.0.0.1")
        #expect(NetworkPolicy.host(fromRemoteAddress: "[::FFFF:10.0.0.1]:9") == "10.0.0.1")
    }

    @Test("loopback peers and Host headers")
    func loopback() {
        for address in ["127.0.0.1:5000", "127.1.2.3", "::1", "[::1]:9099", "::ffff:127.0.0.1"] {
            #expect(NetworkPolicy.isLoopback(address), "\(address)")
        }
        for address in ["10.0.0.1:80", "192.168.1.5", "fd00::1", "[fe80::1]:1", "1127.0.0.1", "127.0.0", nil] as [String?] {
            #expect(!NetworkPolicy.isLoopback(address), "\(address ?? "nil")")
        }
        for host in ["localhost:9099", "LOCALHOST", "127.0.0.1:9099", "[::1]:9099", "127.0.0.1"] {
            #expect(NetworkPolicy.isLoopbackHostHeader(host), "\(host)")
        }
        for host in ["evil.example:9099", "192.168.1.20:9099", "localhost.evil.example", "", nil] as [String?] {
            #expect(!NetworkPolicy.isLoopbackHostHeader(host), "\(host ?? "nil")")
        }
    }

    @Test("the ?token= query parameter is found and percent-decoded")
    func queryToken() {
        #expect(NetworkPolicy.queryToken(fromPath: "/?token=oa_s_abc&x=1") == "oa_s_abc")
        #expect(NetworkPolicy.queryToken(fromPath: "/ws?x=1&token=a%2Db#f") == "a-b")
        #expect(NetworkPolicy.queryToken(fromPath: "/ws?tokens=1") == nil)
        #expect(NetworkPolicy.queryToken(fromPath: "/ws") == nil)
    }

    @Test("Origin: absent passes, same host passes, other sites and null are refused")
    func origin() {
        #expect(NetworkPolicy.isOriginAllowed(origin: nil, host: "192.168.1.20:9099"))
        #expect(NetworkPolicy.isOriginAllowed(origin: "http://192.168.1.20:9099", host: "192.168.1.20:9099"))
        #expect(NetworkPolicy.isOriginAllowed(origin: "http://LOCALHOST:9099", host: "localhost:9099"))
        #expect(NetworkPolicy.isOriginAllowed(origin: "http://[::1]:9099", host: "[::1]:9099"))
        #expect(NetworkPolicy.isOriginAllowed(origin: "http://desk.local", host: "desk.local"))
        #expect(!NetworkPolicy.isOriginAllowed(origin: "http://desk.local", host: "desk.local:9099"))
        #expect(!NetworkPolicy.isOriginAllowed(origin: "https://evil.example", host: "192.168.1.20:9099"))
        #expect(!NetworkPolicy.isOriginAllowed(origin: "http://192.168.1.20:9100", host: "192.168.1.20:9099"))
        #expect(!NetworkPolicy.isOriginAllowed(origin: "null", host: "192.168.1.20:9099"))
        #expect(NetworkPolicy.isOriginAllowed(origin: "app://oa", host: "x:1", allowedOrigins: ["app://oa"]))
        #expect(!NetworkPolicy.isOriginAllowed(origin: "app://oa", host: "x:1"))
        #expect(!NetworkPolicy.isOriginAllowed(origin: "file://", host: "x:1"))
        // Native clients that send a WebSocket-scheme origin (browsers never do).
        #expect(NetworkPolicy.isOriginAllowed(origin: "ws://127.0.0.1", host: "127.0.0.1:9099"))
        #expect(NetworkPolicy.isOriginAllowed(origin: "wss://desk.local", host: nil))
        // Two Origin headers folded into one value are refused.
        #expect(!NetworkPolicy.isOriginAllowed(origin: "ws://127.0.0.1, https://evil.example", host: "127.0.0.1:9099"))
    }

    @Test("the pairing page gate: loopback peer and Host, same origin, JSON for POST")
    func localPageGate() {
        #expect(NetworkPolicy.localPageRefusal(remoteAddress: "127.0.0.1:5", host: "127.0.0.1:9099", origin: nil, method: "GET", contentType: nil) == nil)
        #expect(NetworkPolicy.localPageRefusal(remoteAddress: "[::1]:5", host: "localhost:9099", origin: "http://localhost:9099", method: "POST", contentType: "application/json; charset=utf-8") == nil)
        #expect(NetworkPolicy.localPageRefusal(remoteAddress: "192.168.1.9:5", host: "127.0.0.1:9099", origin: nil, method: "GET", contentType: nil) != nil)
        #expect(NetworkPolicy.localPageRefusal(remoteAddress: "127.0.0.1:5", host: "rebind.evil.example:9099", origin: nil, method: "GET", contentType: nil) != nil)
        #expect(NetworkPolicy.localPageRefusal(remoteAddress: "127.0.0.1:5", host: "127.0.0.1:9099", origin: "https://evil.example", method: "POST", contentType: "application/json") != nil)
        #expect(NetworkPolicy.localPageRefusal(remoteAddress: "127.0.0.1:5", host: "127.0.0.1:9099", origin: nil, method: "POST", contentType: "application/x-www-form-urlencoded") != nil)
    }
}

@Suite("Pairing session, page and upgrade check", .tags(.unit))
struct PairingSessionTests {
    let clock = ManualBridgeClock(wallStart: .pairingTestStart)
    let temporary = TemporaryDirectory()

    @Test("the QR payload always carries a usable token and moves on after each use or claim")
    func sessionRotation() async throws {
        defer { temporary.cleanUp() }
        let store = try TokenStore(
            directory: temporary.stateDirectory, configuration: TokenStoreConfiguration(requireApproval: true), clock: TokenClock(clock))
        let session = PairingSession(
            store: store, endpoint: .init(host: "192.168.1.20", session: "s-1", name: "desk", fallbacks: ["desk.ts.net"]),
            clock: TokenClock(clock))
        let first = try await session.payload()
        let token = try #require(first.token)
        #expect(first.ws == "ws://192.168.1.20:9099/")
        #expect(try await session.payload().token == token)  // stable while unused

        // A phone claims it (approval mode): the QR moves on, the claimed token still completes after approval.
        guard case .pending(let deviceID) = try await store.exchange(pairingToken: token) else {
            Issue.record("expected pending")
            return
        }
        let second = try #require(try await session.payload().token)
        #expect(second != token)
        try await store.approve(deviceID: deviceID)
        guard case .paired = try await store.exchange(pairingToken: token, deviceID: deviceID) else {
            Issue.record("claimed token should complete after approval")
            return
        }

        // Rotation revokes the displayed token; near expiry a fresh one is issued.
        let rotated = try #require(try await session.rotate().token)
        #expect(rotated != second)
        #expect(await pairingError { try await store.exchange(pairingToken: second) } == .revokedToken(.pairing))
        clock.advance(by: .seconds(3600 - 30))
        #expect(try await session.payload().token != rotated)

        let noAuth = PairingSession(store: nil, endpoint: .init(host: "10.0.0.1", session: "s", name: "n"))
        #expect(try await noAuth.payload().token == nil)
    }

    @Test("a used code is replaced at once and announced on changes(): the terminal prints each (issue 29 item 3)")
    func changesAfterUse() async throws {
        // Fails on the old code: nothing announced a new code, so serve kept showing the spent one.
        defer { temporary.cleanUp() }
        let store = try TokenStore(directory: temporary.stateDirectory, clock: TokenClock(clock))
        let session = PairingSession(store: store, endpoint: .init(host: "192.168.1.20", session: "s-1", name: "desk"), clock: TokenClock(clock))
        let changes = await session.changes()
        var next = changes.makeAsyncIterator()
        let shown = try #require(try await session.payload().token)
        await session.replaceIfUsed()  // unused: nothing to announce
        guard case .paired = try await store.exchange(pairingToken: shown) else {
            Issue.record("expected tokens")
            return
        }
        await session.replaceIfUsed()
        let announced = try #require(await next.next())
        let current = try await session.payload().token
        #expect(announced.token != shown && announced.token == current)
        #expect(try await store.isPairingTokenUsable(try #require(announced.token)))
        // "New code" on the page is announced too, and only the newest waits for a slow reader.
        let rotated = try await session.rotate()
        #expect(await next.next()?.token == rotated.token)
    }

    @Test("the pairing page shows the QR, the details, escaped names and pending devices")
    func page() async throws {
        defer { temporary.cleanUp() }
        let store = try TokenStore(
            directory: temporary.stateDirectory, configuration: TokenStoreConfiguration(requireApproval: true), clock: TokenClock(clock))
        let pairing = try await store.issuePairingToken()
        _ = try await store.exchange(pairingToken: pairing.token, deviceName: "<script>alert(1)</script>", address: "10.0.0.7")
        let payload = PairingPayload(host: "192.168.1.20", session: "s", name: "desk & co", token: pairing.token)
        let html = try PairingPage.html(payload: payload, expiresAt: pairing.expiresAt, pending: try await store.pendingDevices())
        #expect(html.contains("<svg xmlns="))
        #expect(html.contains("desk &amp; co"))
        #expect(html.contains(pairing.token))
        #expect(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
        #expect(!html.contains("<script>alert(1)"))
        #expect(html.contains("data-approve=\""))
        let off = try PairingPage.html(payload: PairingPayload(host: "h", session: "s", name: "n", token: nil), expiresAt: nil, pending: [])
        // Issue 31 item 5: the page names the setting (its config key), not serve's flag.
        #expect(off.contains("<strong>off</strong> in the bridge's settings (auth: none)") && !off.contains("--auth") && off.contains("No device is waiting"))
    }

    @Test("upgrade check: Origin, token sources, 401/403/429 with JSON bodies")
    func upgradeCheck() async throws {
        defer { temporary.cleanUp() }
        let store = try TokenStore(directory: temporary.stateDirectory, clock: TokenClock(clock))
        let auth = Authenticator(store: store, limiter: FailedAuthRateLimiter(limit: 3, window: 60, clock: TokenClock(clock)))
        let pairing = try await store.issuePairingToken()
        guard case .paired(let session) = try await store.exchange(pairingToken: pairing.token) else {
            Issue.record("expected tokens")
            return
        }
        let host = "192.168.1.20:9099"
        let ok = await auth.checkUpgrade(path: "/?token=\(session.accessToken.token)", authorization: nil, origin: nil, host: host, remoteAddress: "10.0.0.7:5000")
        guard case .allow(let device) = ok else {
            Issue.record("expected allow, got \(ok)")
            return
        }
        #expect(device.deviceID == session.deviceID)

        let foreign = await auth.checkUpgrade(path: "/", authorization: "Bearer \(session.accessToken.token)", origin: "https://evil.example", host: host, remoteAddress: "10.0.0.7:5000")
        #expect(foreign == .deny(status: 403, body: AuthErrorBody(error: "forbidden_origin", message: PairingTestsSupport.originMessage), retryAfterSeconds: nil))

        let missing = await auth.checkUpgrade(path: "/", authorization: nil, origin: nil, host: host, remoteAddress: "10.0.0.8:1")
        #expect(missing == .deny(status: 401, body: AuthErrorBody(.missingToken), retryAfterSeconds: nil))

        for port in 1...3 {
            let bad = await auth.checkUpgrade(path: "/?token=\(TokenSecret.generate(.access))", authorization: nil, origin: nil, host: host, remoteAddress: "10.0.0.9:\(port)")
            #expect(bad == .deny(status: 401, body: AuthErrorBody(.invalidToken(.access)), retryAfterSeconds: nil))
        }
        let limited = await auth.checkUpgrade(path: "/", authorization: "Bearer \(TokenSecret.generate(.access))", origin: nil, host: host, remoteAddress: "10.0.0.9:4")
        #expect(limited == .deny(status: 429, body: AuthErrorBody(.rateLimited(retryAfterSeconds: 60)), retryAfterSeconds: 60))

        // Without a peer address nothing is rate limited (no shared bucket), but tokens are still checked.
        for _ in 0..<5 {
            let anonymous = await auth.checkUpgrade(path: "/?token=\(TokenSecret.generate(.access))", authorization: nil, origin: nil, host: host, remoteAddress: nil)
            #expect(anonymous == .deny(status: 401, body: AuthErrorBody(.invalidToken(.access)), retryAfterSeconds: nil))
        }
        guard case .allow = await auth.checkUpgrade(path: "/", authorization: "Bearer \(session.accessToken.token)", origin: nil, host: host, remoteAddress: nil) else {
            Issue.record("a good token without a peer address should pass")
            return
        }

        clock.advance(by: .seconds(900))
        let expired = await auth.checkUpgrade(path: "/", authorization: "Bearer \(session.accessToken.token)", origin: nil, host: host, remoteAddress: "10.0.0.7:5000")
        #expect(expired == .deny(status: 403, body: AuthErrorBody(.expiredToken(.access)), retryAfterSeconds: nil))
        let body = try String(decoding: PairingJSON.encoder.encode(AuthErrorBody(.expiredToken(.access))), as: UTF8.self)
        #expect(body.contains(#""error":"token_expired""#))
    }
}

enum PairingTestsSupport {
    static let originMessage =
        "WebSocket connections from web pages of other sites are refused. Connect from the oa-bridge app or a native client."
}
