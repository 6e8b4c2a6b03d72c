import BridgeClient
import BridgePairing
import BridgeRPC
import BridgeServer
import BridgeTestKit
import Foundation
import Logging
import Synchronization
import Testing

/// `oa-bridge connect`'s session against a real bridge whose clock runs ahead of the client's (issue 25's leftover): the
/// bridge refuses the access token as expired (`403 token_expired`) while the client's copy of its expiry says it has
/// minutes left, so the client did not refresh first.
///
/// The client refreshes its tokens and tries once more; only a refused refresh is "needs pairing". Both clocks are
/// injected and moved by hand; nothing sleeps.
@Suite("An unforeseen token_expired: refresh and retry once", .timeLimit(.minutes(1)), .tags(.loopback))
struct TokenExpiredRefreshTests {
    /// A bridge whose token clock is `moved` (moved by hand), with pairing routes.
    static func withBridge(
        moved: ManualBridgeClock, _ body: @Sendable (_ port: Int, _ store: TokenStore) async throws -> Void
    ) async throws {
        var logger = Logger(label: "test.token-expired")
        logger.logLevel = .critical
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("oa-token-expired-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try TokenStore(
            directory: directory, clock: TokenClock(moved), logger: logger)
        try await TestBridge.with(configure: {
            $0.authenticator = Authenticator(store: store)
            $0.pairing = PairingSession(store: store, endpoint: .init(host: "192.0.2.2", session: "session-1", name: "desk"))
        }, { port, _ in try await body(port, store) })
    }

    /// Pairs a vault whose clock is 10 minutes behind the bridge's, then moves both clocks 16 minutes on: past the
    /// access token's 15 minutes on the bridge's clock, 6 minutes into them on the client's.
    ///
    /// The client's clock is moved apart from the bridge's (`clientMoved`), so a test can move the bridge's further.
    static func pairedBehind(
        port: Int, store: TokenStore, moved: ManualBridgeClock,
        clientMoved: ManualBridgeClock = ManualBridgeClock(wallStart: Date().addingTimeInterval(-600))
    ) async throws -> TokenVault {
        let vault = TokenVault(file: nil, clock: clientMoved)
        _ = try await vault.pair(
            bridge: "http://127.0.0.1:\(port)", pairingToken: try await store.issuePairingToken().token, deviceName: "behind")
        moved.advance(by: .seconds(16 * 60))
        clientMoved.advance(by: .seconds(16 * 60))
        return vault
    }

    static let options = BridgeSessionOptions(
        clientName: "behind", connectTimeout: TestBounds.notUnderTest, initializeTimeout: TestBounds.notUnderTest, pingInterval: nil)
    static let logger: Logger = {
        var logger = Logger(label: "test.token-expired.client")
        logger.logLevel = .critical
        return logger
    }()

    @Test("the bridge's token_expired before the client's expiry: the tokens are refreshed and the connection opens")
    func refreshedAndRetried() async throws {
        let moved = ManualBridgeClock()
        try await Self.withBridge(moved: moved) { port, store in
            let vault = try await Self.pairedBehind(port: port, store: store, moved: moved)
            let before = try #require(await vault.current).tokens.accessToken
            let session = try await BridgeClientSession.connect(
                to: [try BridgeEndpoint.manual("127.0.0.1:\(port)")], options: Self.options,
                credential: BridgeClientSession.credential(vault: vault), refresh: BridgeClientSession.refresh(vault: vault),
                logger: Self.logger)
            defer { session.close() }
            #expect(session.first.agentTitle != nil || session.first.initialize["protocolVersion"] != nil)
            #expect(try #require(await vault.current).tokens.accessToken != before, "the tokens were not refreshed")
        }
    }

    @Test("a refused refresh (the refresh token expired too on the bridge's clock) is needs pairing, after one refresh")
    func refusedRefresh() async throws {
        let moved = ManualBridgeClock()
        try await Self.withBridge(moved: moved) { port, store in
            let vault = try await Self.pairedBehind(port: port, store: store, moved: moved)
            // The bridge's clock 31 days on (past the refresh token's 30), the client's still 6 minutes into the access token.
            moved.advance(by: .seconds(31 * 24 * 3600))
            let refreshes = Mutex(0)
            let refresh = try #require(BridgeClientSession.refresh(vault: vault))
            do {
                _ = try await BridgeClientSession.connect(
                    to: [try BridgeEndpoint.manual("127.0.0.1:\(port)")], options: Self.options,
                    credential: BridgeClientSession.credential(vault: vault),
                    refresh: {
                        refreshes.withLock { $0 += 1 }
                        return try await refresh()
                    },
                    logger: Self.logger)
                Issue.record("connected with a revoked device")
            } catch BridgeClientError.needsPairing(_, let detail) {
                #expect(detail.contains("refresh"), "\(detail)")
            }
            #expect(refreshes.withLock { $0 } == 1)
        }
    }

    @Test("connect --stdio's relay: the same token_expired is refreshed and the editor's initialize answered")
    func relayRefreshes() async throws {
        let moved = ManualBridgeClock()
        try await Self.withBridge(moved: moved) { port, store in
            let vault = try await Self.pairedBehind(port: port, store: store, moved: moved)
            let lines = Mutex<[JSONValue]>([])
            let changes = ChangeSignal()
            let relay = ACPRelay(
                candidates: [try BridgeEndpoint.manual("127.0.0.1:\(port)")],
                options: BridgeSessionOptions(
                    connectTimeout: TestBounds.notUnderTest, initializeTimeout: TestBounds.notUnderTest, pingInterval: nil,
                    reconnectPolicy: ReconnectPolicy(maximumAttempts: 0)),
                credential: BridgeClientSession.credential(vault: vault), refresh: BridgeClientSession.refresh(vault: vault),
                logger: Self.logger,
                output: { line in
                    lines.withLock { $0.append((try? JSONValue(parsing: line)) ?? .string(line)) }
                    changes.notify()
                })
            await relay.receive(line: #"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#)
            _ = await changes.wait(timeout: .seconds(20)) { !lines.withLock { $0.isEmpty } }
            await relay.close()
            let answer = try #require(lines.withLock { $0.first })
            #expect(answer["id"] == .int(1) && answer["result"] != nil, "\(answer)")
        }
    }
}
