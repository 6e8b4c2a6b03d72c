import BridgeDPoP
import BridgePairing
import BridgePairingWire
import BridgeTestKit
import Foundation
import GRDB
import Testing

/// Issue 30, the bridge's side: token families bound to a device's DPoP key at the exchange, and every use, refresh
/// and upgrade checked against it (RFC 9449), in each `--dpop` mode.
@Suite("DPoP binding in the authenticator and the token store", .tags(.unit))
struct DPoPAuthenticatorTests {
    let clock = ManualBridgeClock(wallStart: .pairingTestStart)
    let temporary = TemporaryDirectory()
    let device = DPoPSigner()
    static let base = "https://desk.local:9099"

    /// A store and an authenticator in `mode`, proofs checked at the manual clock's time.
    func make(_ mode: DPoPMode) throws -> (TokenStore, Authenticator, DPoPPolicy) {
        let store = try TokenStore(directory: temporary.stateDirectory, clock: TokenClock(clock))
        let policy = DPoPPolicy(mode: mode, clock: TokenClock(clock))
        let auth = Authenticator(store: store, limiter: FailedAuthRateLimiter(clock: TokenClock(clock)), dpop: policy)
        return (store, auth, policy)
    }

    /// A request to `path` with `signer`'s proof (fresh jti unless given), for `token` when given.
    func presentation(
        _ method: String, _ path: String, signer: DPoPSigner? = nil, token: String? = nil, nonce: String?,
        htm: String? = nil, htu: String? = nil, iat: Date? = nil, jti: String = UUID().uuidString
    ) async throws -> DPoPPresentation {
        let proof = try await (signer ?? device).proof(
            method: htm ?? method, uri: htu ?? Self.base + path, accessToken: token, nonce: nonce, now: iat ?? clock.wallTime, jti: jti)
        return DPoPPresentation(method: method, uri: Self.base + path, proof: proof)
    }

    func pair(_ auth: Authenticator, _ store: TokenStore, dpop: DPoPPresentation?) async throws -> DeviceSession {
        let pairing = try await store.issuePairingToken()
        guard case .paired(let session) = try await auth.exchange(
            ExchangeRequest(pairingToken: pairing.token, deviceName: "Pixel"), address: "10.0.0.7", dpop: dpop)
        else { throw PairingError.approvalPending(deviceID: "?") }
        return session
    }

    @Test("a copied access token is refused without the key: no proof, Bearer, another key, a replayed jti, another method or URL, an old iat, a stale nonce")
    func theftOfTheAccessToken() async throws {
        defer { temporary.cleanUp() }
        let (store, auth, policy) = try make(.optional)
        let nonce = try #require(policy.currentNonce())
        let session = try await pair(auth, store, dpop: try await presentation("POST", "/api/auth/exchange", nonce: nonce))
        #expect(session.dpopThumbprint == device.publicKey.thumbprint)
        #expect(session.response(now: clock.wallTime).tokenType == "DPoP")
        let access = session.accessToken.token

        func use(_ authorization: String, _ dpop: DPoPPresentation?) async -> PairingError? {
            await pairingError { try await auth.authenticate(authorization: authorization, address: "10.0.0.7", dpop: dpop) }
        }
        let good = try await presentation("GET", "/api/status", token: access, nonce: nonce, jti: "once")
        #expect(await use("DPoP \(access)", good) == nil)
        #expect(await use("DPoP \(access)", good) == .dpop(.replayed))
        #expect(await use("DPoP \(access)", nil) == .dpop(.missingProof))
        #expect(await use("Bearer \(access)", try await presentation("GET", "/api/status", token: access, nonce: nonce)) == .dpop(.boundTokenAsBearer))
        #expect(await use("DPoP \(access)", try await presentation("GET", "/api/status", signer: DPoPSigner(), token: access, nonce: nonce)) == .dpop(.keyMismatch))
        #expect(await use("DPoP \(access)", try await presentation("GET", "/api/status", token: access, nonce: nonce, htm: "POST")) == .dpop(.wrongMethod(expected: "GET", proof: "POST")))
        if case .dpop(.wrongURI) = await use("DPoP \(access)", try await presentation("GET", "/api/status", token: access, nonce: nonce, htu: Self.base + "/api/me")) {} else {
            Issue.record("a proof for another URL must be refused with wrongURI")
        }
        let tenMinutesAgo = clock.wallTime.addingTimeInterval(-600)
        if case .dpop(.stale) = await use("DPoP \(access)", try await presentation("GET", "/api/status", token: access, nonce: nonce, iat: tenMinutesAgo)) {
        } else {
            Issue.record("a proof made 10 minutes ago must be refused as stale")
        }
        // Without the token's own hash (a proof made for another token) it is refused too.
        #expect(await use("DPoP \(access)", try await presentation("GET", "/api/status", token: "oa_s_other", nonce: nonce)) == .dpop(.accessTokenHashMismatch))
        // A nonce from 2 periods ago is stale: use_dpop_nonce with the current one.
        clock.advance(by: .seconds(660))
        let fresh = try #require(policy.currentNonce())
        #expect(fresh != nonce)
        let stale = await use("DPoP \(access)", try await presentation("GET", "/api/status", token: access, nonce: nonce))
        #expect(stale == .dpop(.nonceRequired(fresh)) && stale?.code == "use_dpop_nonce")
    }

    @Test("a copied refresh token rotates nothing without the key; the rightful refresh stays bound to the same key")
    func theftOfTheRefreshToken() async throws {
        defer { temporary.cleanUp() }
        let (store, auth, policy) = try make(.optional)
        let nonce = try #require(policy.currentNonce())
        let session = try await pair(auth, store, dpop: try await presentation("POST", "/api/auth/exchange", nonce: nonce))
        let request = RefreshRequest(refreshToken: session.refreshToken.token)
        let noProof = await pairingError { try await auth.refresh(request, address: "10.0.0.9") }
        #expect(noProof == .dpop(.missingProof))
        let thief = await pairingError {
            try await auth.refresh(request, address: "10.0.0.9", dpop: try await presentation("POST", "/api/auth/refresh", signer: DPoPSigner(), nonce: nonce))
        }
        #expect(thief == .dpop(.keyMismatch))
        // Neither attempt spent the refresh token: the device refreshes once, bound to the same key.
        let renewed = try await auth.refresh(request, address: "10.0.0.7", dpop: try await presentation("POST", "/api/auth/refresh", nonce: nonce))
        #expect(renewed.dpopThumbprint == device.publicKey.thumbprint)
        #expect(renewed.response(now: clock.wallTime).tokenType == "DPoP")
        let bound = try await store.listDevices()
        #expect(bound.map(\.dpopBound) == [true])
    }

    @Test("a family paired before (unbound) keeps working as Bearer under optional, is refused under required, and required refuses an exchange without a proof")
    func migrationModes() async throws {
        defer { temporary.cleanUp() }
        let (store, optional, _) = try make(.optional)
        let old = try await pair(optional, store, dpop: nil)
        #expect(old.dpopThumbprint == nil && old.response(now: clock.wallTime).tokenType == "Bearer")
        _ = try await optional.authenticate(authorization: "Bearer \(old.accessToken.token)", address: "10.0.0.7")
        #expect(try await store.listDevices().map(\.dpopBound) == [false])

        let required = Authenticator(store: store, dpop: DPoPPolicy(mode: .required, clock: TokenClock(clock)))
        let refused = await pairingError { try await required.authenticate(authorization: "Bearer \(old.accessToken.token)", address: "10.0.0.7") }
        #expect(refused == .dpop(.unboundToken))
        #expect(refused?.message.contains("pair it again") == true)
        let refresh = await pairingError { try await required.refresh(RefreshRequest(refreshToken: old.refreshToken.token), address: "10.0.0.7") }
        #expect(refresh == .dpop(.proofRequired))
        let pairing = try await store.issuePairingToken()
        let exchange = await pairingError { try await required.exchange(ExchangeRequest(pairingToken: pairing.token), address: "10.0.0.7") }
        #expect(exchange == .dpop(.proofRequired))
        // The refused exchange did not spend the pairing code.
        _ = try await required.exchange(
            ExchangeRequest(pairingToken: pairing.token), address: "10.0.0.7",
            dpop: try await presentation("POST", "/api/auth/exchange", nonce: required.dpop?.currentNonce()))

        // off: proofs are ignored and a bound family's token is taken as Bearer.
        let bound = try await pair(optional, store, dpop: try await presentation("POST", "/api/auth/exchange", nonce: optional.dpop?.currentNonce()))
        let off = Authenticator(store: store, dpop: DPoPPolicy(mode: .off, clock: TokenClock(clock)))
        _ = try await off.authenticate(authorization: "Bearer \(bound.accessToken.token)", address: "10.0.0.7")
        #expect(off.dpop?.currentNonce() == nil)
    }

    @Test("a revoked bound family stays revoked, with or without a proof")
    func revokedStaysRevoked() async throws {
        defer { temporary.cleanUp() }
        let (store, auth, policy) = try make(.optional)
        let nonce = try #require(policy.currentNonce())
        let session = try await pair(auth, store, dpop: try await presentation("POST", "/api/auth/exchange", nonce: nonce))
        try await store.revoke(deviceID: session.deviceID)
        let use = await pairingError {
            try await auth.authenticate(
                authorization: "DPoP \(session.accessToken.token)", address: "10.0.0.7",
                dpop: try await presentation("GET", "/api/status", token: session.accessToken.token, nonce: nonce))
        }
        #expect(use == .deviceRevoked(deviceID: session.deviceID))
        let refresh = await pairingError {
            try await auth.refresh(RefreshRequest(refreshToken: session.refreshToken.token), address: "10.0.0.7",
                                   dpop: try await presentation("POST", "/api/auth/refresh", nonce: nonce))
        }
        #expect(refresh == .deviceRevoked(deviceID: session.deviceID))
    }

    @Test("the upgrade takes a browser's ?token=&dpop= (htu without the query) and refuses it without the proof")
    func upgradeFromABrowser() async throws {
        defer { temporary.cleanUp() }
        let (store, auth, policy) = try make(.optional)
        let nonce = try #require(policy.currentNonce())
        let session = try await pair(auth, store, dpop: try await presentation("POST", "/api/auth/exchange", nonce: nonce))
        let access = session.accessToken.token
        let proof = try await device.proof(method: "GET", uri: Self.base + "/", accessToken: access, nonce: nonce, now: clock.wallTime)
        let path = "/?token=\(access)&dpop=\(proof)"
        let presentation = DPoPPresentation(
            method: "GET", uri: DPoPPresentation.targetURI(isTLS: true, authority: "desk.local:9099", path: path),
            proof: NetworkPolicy.queryParameter("dpop", fromPath: path))
        let ok = await auth.checkUpgrade(
            path: path, authorization: nil, origin: nil, host: "desk.local:9099", remoteAddress: "10.0.0.7:5000", dpop: presentation)
        guard case .allow = ok else {
            Issue.record("expected the upgrade to pass, got \(ok)")
            return
        }
        let without = await auth.checkUpgrade(
            path: "/?token=\(access)", authorization: nil, origin: nil, host: "desk.local:9099", remoteAddress: "10.0.0.7:5000",
            dpop: DPoPPresentation(method: "GET", uri: Self.base + "/", proof: nil))
        #expect(without == AccessDecision(denying: .dpop(.missingProof)))
    }

    @Test("a database from before DPoP opens with its families unbound, and its device keeps working under optional")
    func migrationFromV2() async throws {
        defer { temporary.cleanUp() }
        try StateDirectory.prepare(temporary.stateDirectory)
        let path = temporary.stateDirectory.appendingPathComponent(TokenStore.databaseFileName).path
        let access = TokenSecret.generate(.access)
        let now = clock.wallTime.timeIntervalSince1970
        let queue = try DatabaseQueue(path: path)
        try await queue.write { db in
            try db.execute(sql: """
                CREATE TABLE device (id TEXT PRIMARY KEY NOT NULL, name TEXT NOT NULL, created_at REAL NOT NULL,
                    last_seen_at REAL, last_address TEXT, approved INTEGER NOT NULL, revoked_at REAL);
                CREATE TABLE token (hash BLOB PRIMARY KEY NOT NULL,
                    kind TEXT NOT NULL CHECK (kind IN ('pairing', 'access', 'refresh')),
                    device_id TEXT REFERENCES device(id) ON DELETE CASCADE, family_id TEXT, created_at REAL NOT NULL,
                    expires_at REAL NOT NULL, used_at REAL, revoked_at REAL);
                CREATE INDEX token_device ON token(device_id);
                CREATE INDEX token_family ON token(family_id);
                CREATE INDEX device_revoked ON device(revoked_at);
                CREATE INDEX token_refresh_revoked ON token(revoked_at) WHERE kind = 'refresh';
                CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
                INSERT INTO grdb_migrations VALUES ('v1'), ('v2: revocation polling');
                INSERT INTO device VALUES ('d1', 'Old phone', \(now), NULL, NULL, 1, NULL);
                """)
            try db.execute(
                sql: "INSERT INTO token VALUES (?, 'access', 'd1', 'f1', ?, ?, NULL, NULL)",
                arguments: [TokenSecret.hash(access), now, now + 900])
        }
        try queue.close()
        let (store, auth, _) = try make(.optional)
        let old = try await auth.authenticate(authorization: "Bearer \(access)", address: "10.0.0.7")
        #expect(old.deviceID == "d1" && old.dpopThumbprint == nil)
        #expect(try await store.listDevices().map(\.dpopBound) == [false])
    }
}
