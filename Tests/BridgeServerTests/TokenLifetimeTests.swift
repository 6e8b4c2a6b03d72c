import BridgePairing
import BridgeRPC
import BridgeServer
import BridgeTestKit
import BridgeTime
import Foundation
import HummingbirdWSClient
import Logging
import NIOWebSocket
import Testing

/// Open WebSockets of paired devices: closed with 4001 when the access token expires, 4003 when the device is revoked.
@Suite("Token lifetime on open WebSockets", .timeLimit(.minutes(1)), .tags(.loopback))
struct TokenLifetimeTests {
    /// A token store in a fresh directory with the given access-token lifetime, reading `clock`'s wall time.
    static func makeStore(accessLifetime: TimeInterval, clock: any BridgeClock = ContinuousClock()) throws -> TokenStore {
        var logger = Logger(label: "test.tokens")
        logger.logLevel = .critical
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("oa-bridge-lifetime-\(UUID().uuidString)")
        return try TokenStore(
            directory: directory,
            configuration: TokenStoreConfiguration(lifetimes: TokenLifetimes(access: accessLifetime)),
            clock: TokenClock(clock),
            logger: logger)
    }

    /// Pairs a new device; returns its id and access token.
    static func pair(_ store: TokenStore, name: String) async throws -> (device: String, access: String, expiresAt: Date) {
        let pairing = try await store.issuePairingToken()
        guard case .paired(let session) = try await store.exchange(pairingToken: pairing.token, deviceName: name) else {
            throw TestClientError.closed
        }
        return (session.deviceID, session.accessToken.token, session.accessToken.expiresAt)
    }

    @Test("the WebSocket closes with 4001 when its access token expires, after working until then")
    func expiry() async throws {
        // The store and the bridge read one clock moved by hand: the token's 10 minutes pass at once, and a loaded
        // machine cannot make the connection late for them (in real time this test took 12 s and needed margins).
        let clock = ManualClock()
        let store = try Self.makeStore(accessLifetime: 600, clock: clock)
        let phone = try await Self.pair(store, name: "phone")
        try await TestBridge.with(configure: {
            $0.authenticator = Authenticator(store: store)
            $0.clock = clock
        }, { port, _ in
            try await TestClient.with(port: port, path: "/?token=\(phone.access)") { client in
                try await client.initialize(seed: false)
                _ = try await client.newSession(seed: false)
                // A millisecond before it expires the connection still works.
                clock.advance(by: .seconds(600) - .milliseconds(1))
                _ = try await client.newSession(seed: false)
                #expect(clock.wallTime < phone.expiresAt)
                clock.advance(by: .milliseconds(2))
                let frame = try await client.waitForEnd(timeout: .seconds(10))
                #expect(frame?.closeCode == .unknown(4001))
                #expect(frame?.reason == "access token expired; refresh and reconnect")
            }
            // The expired token no longer opens a WebSocket; a refreshed one would (the upgrade check is the store's).
            let refused = try await onOwnThread { () throws -> Bool in
                do {
                    _ = try RawWebSocket(port: port, path: "/?token=\(phone.access)")
                    return false
                } catch {
                    return true
                }
            }
            #expect(refused)
        })
    }

    @Test("revoking a device closes all its WebSockets with 4003 at once; other devices stay connected")
    func revocation() async throws {
        let store = try Self.makeStore(accessLifetime: 600)
        let phone = try await Self.pair(store, name: "phone")
        let tablet = try await Self.pair(store, name: "tablet")
        try await TestBridge.with(configure: {
            $0.authenticator = Authenticator(store: store)
            $0.revocationPollInterval = .milliseconds(100)
        }, { port, _ in
            try await TestClient.with(port: port, path: "/?token=\(tablet.access)") { other in
                try await other.initialize(seed: true)
                try await TestClient.with(port: port, path: "/?token=\(phone.access)") { first in
                    try await TestClient.with(port: port, path: "/?token=\(phone.access)") { second in
                        try await first.initialize(seed: false)
                        try await second.initialize(seed: true)
                        let revokedAt = ContinuousClock.now
                        try await store.revoke(deviceID: phone.device)
                        for client in [first, second] {
                            let frame = try await client.waitForEnd()
                            #expect(frame?.closeCode == .unknown(4003))
                            #expect(frame?.reason == "device revoked")
                        }
                        // The close code names the cause; the time says only that the close came promptly (the poll is
                        // every 100 ms here), with room for a stalled full run: a stall of seconds failed the 2 s it had.
                        #expect(ContinuousClock.now - revokedAt < .seconds(10))
                    }
                }
                // The tablet is unaffected.
                _ = try await other.newSession(seed: true)
            }
        })
    }

    @Test("refused upgrades keep their status and JSON body: 401 missing token, 401 unknown token, 403 revoked")
    func refusalBodies() async throws {
        let store = try Self.makeStore(accessLifetime: 600)
        let phone = try await Self.pair(store, name: "phone")
        try await TestBridge.with(configure: { $0.authenticator = Authenticator(store: store) }, { port, _ in
            let missing = try await onOwnThread { try ShutdownTests.upgradeReply(port: port) }
            #expect(missing.status == 401)
            #expect(try JSONValue(parsing: missing.text)["error"] == "missing_token")
            let unknown = try await onOwnThread { try ShutdownTests.upgradeReply(port: port, path: "/?token=oa_s_nothing") }
            #expect(unknown.status == 401)
            #expect(!unknown.text.contains("oa_s_nothing"))
            try await store.revoke(deviceID: phone.device)
            let revoked = try await onOwnThread { try ShutdownTests.upgradeReply(port: port, path: "/?token=\(phone.access)") }
            #expect(revoked.status == 403)
            #expect(revoked.headers["content-type"] == "application/json")
            #expect(try JSONValue(parsing: revoked.text)["error"] == "device_revoked")
            #expect(!revoked.text.contains(phone.access))
        })
    }
}
