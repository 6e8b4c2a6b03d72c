import BridgeHTTP
import BridgePairing
import BridgePairingUI
import BridgeTestKit
import BridgeTime
import BridgeWebApp
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdWSClient
import Logging
import NIOWebSocket
import Synchronization
import Testing
@testable import BridgeServer
#if canImport(Glibc)
import Glibc
#endif

/// The pairing and auth routes (Sources/BridgeHTTP/PairingRoutes.swift) over real HTTP on 127.0.0.1.
@Suite("Pairing and auth routes", .tags(.loopback, .externalTool))
struct PairingRoutesTests {
    /// Runs the bridge's HTTP routes (``BridgeHTTPRouter``: pairing, health, the protected `/api/status`) on port 0.
    static func withRoutes<T: Sendable>(
        requireApproval: Bool = false, clock: any BridgeClock = ContinuousClock(),
        _ body: @Sendable (_ port: Int, _ store: TokenStore) async throws -> T
    ) async throws -> T {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("oa-bridge-routes-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var logger = Logger(label: "test.pairing-routes")
        logger.logLevel = .critical
        let store = try TokenStore(
            directory: directory, configuration: TokenStoreConfiguration(requireApproval: requireApproval), clock: TokenClock(clock),
            logger: logger)
        let authenticator = Authenticator(store: store)
        let pairing = PairingSession(
            store: store, endpoint: .init(host: "192.0.2.2", session: "session-1", name: "desk"), clock: TokenClock(clock))
        var configuration = BridgeServerConfiguration(serverName: "desk")
        configuration.authenticator = authenticator
        configuration.pairing = pairing
        let http = BridgeHTTPRouter(configuration: configuration, gate: nil, started: Date(), logger: logger)
        let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            responder: http.responder(),
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in portSink.yield(channel.localAddress?.port ?? 0) },
            logger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await app.runService() }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else { throw LoopbackHTTP.Failure(message: "server did not start") }
            defer { group.cancelAll() }
            return try await body(port, store)
        }
    }

    @Test("expires_in counts from the bridge's clock, not the machine's: 900 on a clock standing in 2001")
    func expiresInOnTheBridgeClock() async throws {
        let clock = ManualBridgeClock(wallStart: Date(timeIntervalSince1970: 1_000_000_000))
        try await Self.withRoutes(clock: clock) { port, store in
            let pairing = try await store.issuePairingToken()
            let answer = try await LoopbackHTTP.request(
                port: port, "POST", "/api/auth/exchange", json: #"{"pairing_token":"\#(pairing.token)","device_name":"phone"}"#)
            #expect(answer.status == 200, "\(answer.text)")
            let tokens = try PairingJSON.decoder.decode(TokenResponse.self, from: Data(answer.text.utf8))
            #expect(tokens.expiresIn == 900)
        }
    }

    @Test("a phone-like client goes from the QR payload to an authenticated, refreshed session")
    func phoneFlow() async throws {
        try await Self.withRoutes { port, _ in
            let info = try await LoopbackHTTP.request(port: port, "GET", "/api/pair/info")
            #expect(info.status == 200)
            let payload = try PairingPayload.decode(info.text)
            let pairingToken = try #require(payload.token)
            #expect(payload.ws == "ws://192.0.2.2:9099/")

            #expect(try await LoopbackHTTP.request(port: port, "GET", "/api/status").status == 401)
            #expect(try await LoopbackHTTP.request(port: port, "GET", "/api/health").status == 200)

            let exchange = try await LoopbackHTTP.request(
                port: port, "POST", "/api/auth/exchange", json: #"{"pairing_token":"\#(pairingToken)","device_name":"Pixel"}"#)
            #expect(exchange.status == 200)
            let tokens = try PairingJSON.decoder.decode(TokenResponse.self, from: Data(exchange.body))
            #expect(tokens.tokenType == "Bearer" && (895...900).contains(tokens.expiresIn))

            let reused = try await LoopbackHTTP.request(port: port, "POST", "/api/auth/exchange", json: #"{"pairing_token":"\#(pairingToken)"}"#)
            #expect(reused.status == 403)
            #expect(reused.text.contains("pairing_token_used") && !reused.text.contains(pairingToken))

            #expect(try await LoopbackHTTP.request(port: port, "GET", "/api/status", headers: ["Authorization": "Bearer \(tokens.accessToken)"]).status == 200)
            let refreshed = try await LoopbackHTTP.request(
                port: port, "POST", "/api/auth/refresh", json: #"{"refresh_token":"\#(tokens.refreshToken)"}"#)
            #expect(refreshed.status == 200)
            let renewed = try PairingJSON.decoder.decode(TokenResponse.self, from: Data(refreshed.body))
            let old = try await LoopbackHTTP.request(port: port, "GET", "/api/status", headers: ["Authorization": "Bearer \(tokens.accessToken)"])
            #expect(old.status == 403)
            #expect(old.text.contains("token_revoked"))
            #expect(try await LoopbackHTTP.request(port: port, "GET", "/api/status", headers: ["Authorization": "Bearer \(renewed.accessToken)"]).status == 200)

            #expect(try await LoopbackHTTP.request(port: port, "POST", "/api/auth/refresh", json: "nope").status == 400)
        }
    }

    @Test("the QR PNG carries the payload of /api/pair/info; refresh replaces the code; form posts are refused")
    func pairingEndpoints() async throws {
        try await Self.withRoutes { port, _ in
            let info = try await LoopbackHTTP.request(port: port, "GET", "/api/pair/info")
            let qr = try await LoopbackHTTP.request(port: port, "GET", "/api/pair/qr?scale=4")
            #expect(qr.status == 200)
            #expect(qr.headers["content-type"] == "image/png")
            #expect(Array(qr.body.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
            let expected = try PairingPayload.decode(info.text).qrCode().pngData(scale: 4, quietZone: 4)
            #expect(qr.body == expected)
            // /api/pair/info keeps the JSON for native apps and adds url, the QR code's text.
            let described = try JSONDecoder().decode(PairingInfo.self, from: Data(info.body))
            // The short link (issue 29 item 2): a plaintext bridge's holds the code only (#2…).
            #expect(described.url == described.payload.qrText && described.url.hasPrefix("http://192.0.2.2:9099/app#2"))
            #expect(try PairingPayload(scannedText: described.url).token == PairingPayload.decode(info.text).token)
            #expect(try PairingPayload(scannedText: described.payload.appURL) == PairingPayload.decode(info.text))

            let page = try await LoopbackHTTP.request(port: port, "GET", "/pair")
            #expect(page.status == 200)
            #expect(page.text.contains(">\(PairingPage.escape(described.url))</code>"))
            #expect(page.text.contains("<svg") && page.text.contains("Pair a phone with desk"))
            #expect(page.headers["cache-control"] == "no-store")
            #expect(page.headers["x-frame-options"] == "DENY" && page.headers["x-content-type-options"] == "nosniff")
            #expect(page.headers["referrer-policy"] == "no-referrer")

            #expect(try await LoopbackHTTP.request(port: port, "POST", "/api/pair/refresh", body: "x=1", contentType: "application/x-www-form-urlencoded").status == 403)
            let foreign = try await LoopbackHTTP.request(port: port, "POST", "/api/pair/refresh", json: "{}", headers: ["Origin": "https://evil.example"])
            #expect(foreign.status == 403)
            let rebinding = try await LoopbackHTTP.request(port: port, "GET", "/api/pair/info", host: "rebind.evil.example:9099")
            #expect(rebinding.status == 403)

            let rotated = try await LoopbackHTTP.request(port: port, "POST", "/api/pair/refresh", json: "{}")
            #expect(rotated.status == 200)
            let oldToken = try PairingPayload.decode(info.text).token ?? ""
            #expect(try PairingPayload.decode(rotated.text).token != oldToken)
            let stale = try await LoopbackHTTP.request(port: port, "POST", "/api/auth/exchange", json: #"{"pairing_token":"\#(oldToken)"}"#)
            #expect(stale.status == 403 && stale.text.contains("token_revoked"))
        }
    }

    @Test("issue 29: the exchange names the bridge, /api/pair/hello completes a short link, GET / goes to /app")
    func shortLinkRoutes() async throws {
        try await Self.withRoutes { port, _ in
            let hello = try await LoopbackHTTP.request(port: port, "GET", "/api/pair/hello")
            #expect(hello.status == 200)
            let details = try PairingPayload.decode(hello.text)
            #expect(details.name == "desk" && details.session == "session-1" && details.token == nil && details.ws == "ws://192.0.2.2:9099/")
            let info = try PairingPayload.decode(try await LoopbackHTTP.request(port: port, "GET", "/api/pair/info").text)
            let exchange = try await LoopbackHTTP.request(
                port: port, "POST", "/api/auth/exchange", json: #"{"pairing_token":"\#(info.token ?? "")","device_name":"Pixel"}"#)
            let tokens = try PairingJSON.decoder.decode(TokenResponse.self, from: Data(exchange.body))
            #expect(tokens.bridge?.name == "desk" && tokens.bridge?.token == nil && tokens.bridge?.session == "session-1")
            // Fails on the old code: GET / was an empty 404.
            let root = try await LoopbackHTTP.request(port: port, "GET", "/")
            #expect(root.status == 302 && root.headers["location"] == "/app" && root.text.contains("/app"))
        }
    }

    @Test("issue 29 item 3: /api/pair/state changes when a device waits for approval, with it and a new code")
    func pairingState() async throws {
        try await Self.withRoutes(requireApproval: true) { port, _ in
            struct State: Decodable { var qr, details, pending, devices, version: String }
            let before = try JSONDecoder().decode(State.self, from: Data(try await LoopbackHTTP.request(port: port, "GET", "/api/pair/state").body))
            #expect(before.pending.contains("No device is waiting"))
            let again = try JSONDecoder().decode(State.self, from: Data(try await LoopbackHTTP.request(port: port, "GET", "/api/pair/state").body))
            #expect(again.version == before.version, "nothing changed: the page does not redraw")
            let info = try PairingPayload.decode(try await LoopbackHTTP.request(port: port, "GET", "/api/pair/info").text)
            let pending = try await LoopbackHTTP.request(
                port: port, "POST", "/api/auth/exchange", json: #"{"pairing_token":"\#(info.token ?? "")","device_name":"Safari on iPhone (iOS 17.2)"}"#)
            #expect(pending.status == 202)
            let after = try JSONDecoder().decode(State.self, from: Data(try await LoopbackHTTP.request(port: port, "GET", "/api/pair/state").body))
            #expect(after.version != before.version)
            #expect(after.pending.contains("Safari on iPhone (iOS 17.2)") && after.pending.contains("data-approve"))
            #expect(after.qr != before.qr && !after.details.contains(info.token ?? "-"), "the claimed code was replaced")
            #expect(try await LoopbackHTTP.request(port: port, "GET", "/api/pair/state", host: "rebind.evil.example:9099").status == 403)
        }
    }

    @Test("the phone web app: /app and its files with a strict CSP, nosniff and no-referrer; unknown files 404; under 150 KB")
    func webApp() async throws {
        try await Self.withRoutes { port, _ in
            for (path, type) in [
                ("/app", "text/html; charset=utf-8"), ("/app/", "text/html; charset=utf-8"),
                ("/app/main.js", "text/javascript; charset=utf-8"), ("/app/app.css", "text/css; charset=utf-8"),
                ("/app/manifest.webmanifest", "application/manifest+json"), ("/app/icon192.png", "image/png"),
            ] {
                let answer = try await LoopbackHTTP.request(port: port, "GET", path)
                #expect(answer.status == 200, "\(path)")
                #expect(answer.headers["content-type"] == type, "\(path)")
                let csp = answer.headers["content-security-policy"] ?? ""
                #expect(csp.contains("script-src 'self';") && csp.contains("style-src 'self';") && csp.contains("connect-src 'self';"))
                #expect(!csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"))
                #expect(answer.headers["x-content-type-options"] == "nosniff")
                #expect(answer.headers["referrer-policy"] == "no-referrer")
            }
            let page = try await LoopbackHTTP.request(port: port, "GET", "/app")
            // No inline script or style: every script and style sheet is a file of the app.
            #expect(page.text.contains(#"<script type="module" src="/app/main.js"></script>"#))
            #expect(!page.text.contains("<style") && !page.text.contains("style=") && !page.text.contains("onclick"))
            let missing = try await LoopbackHTTP.request(port: port, "GET", "/app/nothing.js")
            #expect(missing.status == 404 && missing.headers["x-content-type-options"] == "nosniff")
            #expect(try await LoopbackHTTP.request(port: port, "GET", "/app/../api/status").status == 401)
            #expect(WebAppAssets.totalBytes < 150_000)
            // Every file of the app's folder is embedded and served, and nothing else.
            let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("../../Sources/BridgeWebApp/App").standardizedFileURL
            let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { !$0.hasPrefix(".") }
            #expect(Set(WebAppAssets.all.keys) == Set(files), "embedded \(WebAppAssets.all.keys.sorted()), folder \(files.sorted())")
        }
    }

    @Test("approval mode: 202 until approved from the loopback page API, then tokens")
    func approval() async throws {
        try await Self.withRoutes(requireApproval: true) { port, store in
            let token = try PairingPayload.decode(try await LoopbackHTTP.request(port: port, "GET", "/api/pair/info").text).token ?? ""
            let first = try await LoopbackHTTP.request(port: port, "POST", "/api/auth/exchange", json: #"{"pairing_token":"\#(token)"}"#)
            #expect(first.status == 202)
            let pending = try PairingJSON.decoder.decode(PendingResponse.self, from: Data(first.body))
            #expect(try await LoopbackHTTP.request(port: port, "GET", "/pair").text.contains("data-approve=\"\(pending.deviceID)\""))
            let approve = try await LoopbackHTTP.request(port: port, "POST", "/api/pair/approve", json: #"{"device_id":"\#(pending.deviceID.prefix(8))"}"#)
            #expect(approve.status == 200)
            let intruder = try await LoopbackHTTP.request(port: port, "POST", "/api/auth/exchange", json: #"{"pairing_token":"\#(token)"}"#)
            #expect(intruder.status == 403)
            let second = try await LoopbackHTTP.request(
                port: port, "POST", "/api/auth/exchange", json: #"{"pairing_token":"\#(token)","device_id":"\#(pending.deviceID)"}"#)
            #expect(second.status == 200)
            #expect(try await store.listDevices().first?.approved == true)

            // The page lists the paired device with a revoke button; revoking it from the loopback API ends it.
            #expect(try await LoopbackHTTP.request(port: port, "GET", "/pair").text.contains("data-revoke=\"\(pending.deviceID)\""))
            let listed = try await LoopbackHTTP.request(port: port, "GET", "/api/pair/devices")
            let devices = try PairingJSON.decoder.decode([DeviceRecord].self, from: Data(listed.body))
            #expect(devices.map(\.id) == [pending.deviceID])
            let foreign = try await LoopbackHTTP.request(
                port: port, "POST", "/api/pair/revoke", json: #"{"device_id":"\#(pending.deviceID)"}"#, headers: ["Origin": "https://evil.example"])
            #expect(foreign.status == 403)
            let revoke = try await LoopbackHTTP.request(port: port, "POST", "/api/pair/revoke", json: #"{"device_id":"\#(pending.deviceID)"}"#)
            #expect(revoke.status == 200)
            #expect(try await store.listDevices().first?.isRevoked == true)
            #expect(try await LoopbackHTTP.request(port: port, "GET", "/pair").text.contains("No phone is paired."))
            let all = try await LoopbackHTTP.request(port: port, "GET", "/api/pair/devices?all=1")
            #expect(try PairingJSON.decoder.decode([DeviceRecord].self, from: Data(all.body)).count == 1)
        }
    }

    @Test(
        "the /pair page renders in headless Chromium and its QR code decodes to /api/pair/info's url",
        .enabled(if: PairingPageRenderer.shared != nil, PairingPageRenderer.unavailableReason),
        .timeLimit(.minutes(1)))
    func pageInChromium() async throws {
        let renderer = try #require(PairingPageRenderer.shared)
        try await Self.withRoutes { port, _ in
            let info = try await LoopbackHTTP.request(port: port, "GET", "/api/pair/info")
            let screenshot = try await renderer.screenshot(url: "http://127.0.0.1:\(port)/pair")
            let url = try JSONDecoder().decode(PairingInfo.self, from: Data(info.body)).url
            // zxing-cpp in Python blocks while it starts and reads: on a thread of its own, not one of the few every
            // task runs on (blocked there, it stalled other tests' tasks in full runs).
            let decoded = try await onOwnThread { try renderer.decodeQR(png: screenshot) }
            #expect(decoded == url)
        }
    }

    @Test("the bridge's WebSocket takes a paired device's access token (header or ?token=) and refuses the rest")
    func webSocketUpgrade() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("oa-bridge-ws-auth-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var logger = Logger(label: "test.pairing-ws")
        logger.logLevel = .critical
        let quiet = logger
        let store = try TokenStore(directory: directory, logger: quiet)
        let authenticator = Authenticator(store: store)
        let pairing = try await store.issuePairingToken()
        guard case .paired(let session) = try await store.exchange(pairingToken: pairing.token) else {
            Issue.record("expected tokens")
            return
        }
        let access = session.accessToken.token
        try await TestBridge.with(configure: { $0.authorizeUpgrade = authenticator.upgradeAuthorizer() }, { port, _ in
            func connects(_ url: String, headers: [String: String] = [:]) async -> Bool {
                var configuration = WebSocketClientConfiguration()
                for (name, value) in headers {
                    if let field = HTTPField.Name(name) { configuration.additionalHeaders[field] = value }
                }
                let frozen = configuration
                let answered = Mutex(false)
                do {
                    try await WebSocketClient.connect(url: url, configuration: frozen, logger: quiet) { inbound, outbound, _ in
                        try await outbound.write(.text(HandshakeTests.seedInitialize))
                        for try await message in inbound.messages(maxSize: 1 << 20) {
                            if case .text = message {
                                answered.withLock { $0 = true }
                                break
                            }
                        }
                        try await outbound.close(.normalClosure, reason: nil)
                    }
                } catch {
                    return false
                }
                return answered.withLock { $0 }
            }
            // HummingbirdWSClient itself sends "Origin: ws://127.0.0.1", which passes; a web page's origin does not.
            #expect(await connects("ws://127.0.0.1:\(port)/", headers: ["Authorization": "Bearer \(access)"]))
            #expect(await connects("ws://127.0.0.1:\(port)/?token=\(access)"))
            #expect(await connects("ws://127.0.0.1:\(port)/") == false)
            #expect(await connects("ws://127.0.0.1:\(port)/?token=\(TokenSecret.generate(.access))") == false)
            #expect(await connects("ws://127.0.0.1:\(port)/?token=\(access)", headers: ["Origin": "https://evil.example"]) == false)
            try await store.revoke(deviceID: session.deviceID)
            #expect(await connects("ws://127.0.0.1:\(port)/?token=\(access)") == false)
        })

        // The authorizer's answers: typed refusals (status, code, message) without the token.
        let authorize = authenticator.upgradeAuthorizer()
        let revoked = await authorize(BridgeUpgradeRequest(
            path: "/?token=\(access)", headers: [:], remoteAddress: "127.0.0.1", host: "127.0.0.1:9099"))
        guard case .deny(let refusal) = revoked else {
            Issue.record("expected a denial")
            return
        }
        #expect(refusal.status == .forbidden && refusal.code == PairingError.deviceRevoked(deviceID: session.deviceID).code)
        #expect(!refusal.message.contains(access) && !refusal.bodyText.contains(access))
        let missing = await authorize(BridgeUpgradeRequest(path: "/", headers: [:], remoteAddress: "127.0.0.1", host: "127.0.0.1:9099"))
        #expect(missing == .deny(status: .unauthorized, code: PairingError.missingToken.code, message: PairingError.missingToken.message))
    }

    @Test("guessing tokens from one address gets 429 with Retry-After")
    func rateLimit() async throws {
        try await Self.withRoutes { port, _ in
            for _ in 0..<10 {
                let guess = try await LoopbackHTTP.request(port: port, "GET", "/api/status", headers: ["Authorization": "Bearer \(TokenSecret.generate(.access))"])
                #expect(guess.status == 401)
                #expect(guess.headers["www-authenticate"] == "Bearer")
            }
            let limited = try await LoopbackHTTP.request(port: port, "GET", "/api/status", headers: ["Authorization": "Bearer \(TokenSecret.generate(.access))"])
            #expect(limited.status == 429)
            #expect(Int(limited.headers["retry-after"] ?? "") ?? 0 > 0)
        }
    }
}

/// Headless Chromium (Debian package `chromium`) for screenshots and `zxing-cpp` (PyPI, with `pillow`) to read them.
///
/// Chromium is pointed at a dead proxy, so nothing but loopback (which bypasses proxies) can be reached.
struct PairingPageRenderer: Sendable {
    let chromium: String
    let python: String

    static let unavailableReason: Comment =
        "needs headless Chromium (apt-get install chromium) and zxing-cpp (python3 -m venv .venv && .venv/bin/pip install zxing-cpp pillow)"

    static let shared: PairingPageRenderer? = {
        let fileManager = FileManager.default
        guard let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first(where: fileManager.isExecutableFile(atPath:)) else {
            return nil
        }
        let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        var candidates: [String] = []
        if let configured = ProcessInfo.processInfo.environment["OA_BRIDGE_PYTHON"] { candidates.append(configured) }
        candidates += [packageRoot.appendingPathComponent(".venv/bin/python").path, "/usr/bin/python3"]
        for python in candidates where fileManager.isExecutableFile(atPath: python) {
            if let output = try? run(python, ["-c", "import zxingcpp, PIL; print('ok')"], timeout: 30),
               output.trimmingCharacters(in: .whitespacesAndNewlines) == "ok" {
                return PairingPageRenderer(chromium: chromium, python: python)
            }
        }
        return nil
    }()

    /// A PNG screenshot of `url` at 900x1400 (the work happens on a thread of its own).
    func screenshot(url: String) async throws -> Data {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("oa-bridge-chromium-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = directory.appendingPathComponent("page.png")
        let arguments = [
            "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=900,1400",
            "--no-first-run", "--no-default-browser-check", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--disable-domain-reliability", "--no-pings", "--proxy-server=http://127.0.0.1:9",
            "--user-data-dir=\(directory.appendingPathComponent("profile").path)",
            "--screenshot=\(output.path)", url,
        ]
        let chromium = self.chromium
        _ = try await onOwnThread { try Self.run(chromium, arguments, timeout: 45) }
        return try Data(contentsOf: output)
    }

    /// The text of the single QR code in a PNG.
    func decodeQR(png: Data) throws -> String {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("oa-bridge-page-\(UUID().uuidString).png")
        try png.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let script = """
            import sys, zxingcpp
            from PIL import Image
            found = [r for r in zxingcpp.read_barcodes(Image.open(sys.argv[1])) if r.format == zxingcpp.BarcodeFormat.QRCode]
            if len(found) != 1:
                sys.exit("found %d QR codes" % len(found))
            sys.stdout.write(bytes(found[0].bytes).hex())
            """
        let hex = try Self.run(python, ["-c", script, file.path], timeout: 30).trimmingCharacters(in: .whitespacesAndNewlines)
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex, let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex), let byte = UInt8(hex[index..<next], radix: 16) {
            bytes.append(byte)
            index = next
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Runs a program to completion (killed after `timeout` seconds) and returns its standard output.
    static func run(_ executable: String, _ arguments: [String], timeout: TimeInterval) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        // Its exit is waited for (bounded): outputs here are small (well under a pipe buffer), so wait first and read
        // after, and a hung child cannot block us.
        let exited = DispatchGroup()
        exited.enter()
        process.terminationHandler = { _ in exited.leave() }
        try process.run()
        if exited.wait(timeout: .now() + timeout) == .timedOut {
            process.terminate()
            throw LoopbackHTTP.Failure(message: "\(executable) did not finish within \(Int(timeout)) s")
        }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        guard process.terminationStatus == 0 else {
            throw LoopbackHTTP.Failure(message: "\(executable) exited with status \(process.terminationStatus)")
        }
        return String(decoding: data, as: UTF8.self)
    }
}
