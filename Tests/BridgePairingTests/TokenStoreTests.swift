import BridgePairing
import BridgeTestKit
import Foundation
import Testing

@Suite("Token store", .tags(.unit))
struct TokenStoreTests {
    let clock = ManualBridgeClock(wallStart: .pairingTestStart)
    let temporary = TemporaryDirectory()

    func makeStore(requireApproval: Bool = false) throws -> TokenStore {
        try TokenStore(
            directory: temporary.stateDirectory,
            configuration: TokenStoreConfiguration(requireApproval: requireApproval),
            clock: TokenClock(clock))
    }

    /// Pairs a device and returns its session.
    func pair(_ store: TokenStore, name: String = "Pixel") async throws -> DeviceSession {
        let pairing = try await store.issuePairingToken()
        let outcome = try await store.exchange(pairingToken: pairing.token, deviceName: name, address: "10.0.0.7")
        guard case .paired(let session) = outcome else {
            Issue.record("expected paired, got \(outcome)")
            throw PairingError.approvalPending(deviceID: "?")
        }
        return session
    }

    @Test("the purge deletes devices revoked more than a week ago, with their tokens; newer ones stay listed")
    func purgeRevokedDevices() async throws {
        defer { temporary.cleanUp() }
        let store = try makeStore()
        let old = try await pair(store, name: "old phone")
        _ = try await store.revoke(deviceID: old.deviceID)
        clock.advance(by: .seconds(6 * 24 * 3600))
        let recent = try await pair(store, name: "recent phone")
        _ = try await store.revoke(deviceID: recent.deviceID)
        let kept = try await pair(store, name: "phone in use")
        clock.advance(by: .seconds(24 * 3600 + 60))  // the first revocation is now more than a week old, the second is not

        #expect(try await store.purgeExpiredTokens() > 0)
        let ids = try await store.listDevices(includeRevoked: true).map(\.id)
        #expect(!ids.contains(old.deviceID), "revoked over a week ago: gone")
        #expect(ids.contains(recent.deviceID), "revoked a day ago: still listed")
        #expect(ids.contains(kept.deviceID))
    }

    @Test("exchange gives a device access and refresh tokens; the pairing token works once")
    func exchangeIsSingleUse() async throws {
        defer { temporary.cleanUp() }
        let store = try makeStore()
        let pairing = try await store.issuePairingToken()
        #expect(pairing.expiresAt == clock.wallTime.addingTimeInterval(3600))

        let outcome = try await store.exchange(pairingToken: pairing.token, deviceName: "Pixel 8", address: "10.0.0.7")
        guard case .paired(let session) = outcome else {
            Issue.record("expected tokens, got \(outcome)")
            return
        }
        #expect(session.accessToken.token.hasPrefix("oa_s_"))
        #expect(session.refreshToken.token.hasPrefix("oa_r_"))
        #expect(session.accessToken.expiresAt == clock.wallTime.addingTimeInterval(900))
        #expect(session.refreshToken.expiresAt == clock.wallTime.addingTimeInterval(30 * 24 * 3600))

        let device = try await store.validateAccess(session.accessToken.token, address: "10.0.0.8")
        #expect(device.deviceID == session.deviceID)
        #expect(device.deviceName == "Pixel 8")

        let second = await pairingError { try await store.exchange(pairingToken: pairing.token) }
        #expect(second == .pairingTokenAlreadyUsed)
        #expect(second?.httpStatus == 403)
        #expect(second?.message.contains(pairing.token) == false)

        let devices = try await store.listDevices()
        #expect(devices.count == 1)
        #expect(devices.first?.name == "Pixel 8")
        #expect(devices.first?.lastAddress == "10.0.0.8")
        #expect(devices.first?.approved == true)

        let response = session.response(now: clock.wallTime)
        #expect(response.expiresIn == 900 && response.tokenType == "Bearer")
        let json = try String(decoding: PairingJSON.encoder.encode(response), as: UTF8.self)
        for key in ["access_token", "access_token_expires_at", "refresh_token", "refresh_token_expires_at", "token_type", "expires_in", "device_id"] {
            #expect(json.contains("\"\(key)\""))
        }
    }

    @Test("missing, malformed, unknown and wrong-kind tokens are 401; the message never echoes the token")
    func invalidTokens() async throws {
        defer { temporary.cleanUp() }
        let store = try makeStore()
        let session = try await pair(store)

        #expect(await pairingError { try await store.validateAccess("") } == .missingToken)
        #expect(await pairingError { try await store.validateAccess("   ") } == .missingToken)
        #expect(await pairingError { try await store.validateAccess("garbage") } == .invalidToken(.access))
        let unknown = TokenSecret.generate(.access)
        let unknownError = await pairingError { try await store.validateAccess(unknown) }
        #expect(unknownError == .invalidToken(.access))
        #expect(unknownError?.httpStatus == 401)
        #expect(unknownError?.message.contains(unknown) == false)
        // A refresh token is no access token and vice versa.
        #expect(await pairingError { try await store.validateAccess(session.refreshToken.token) } == .invalidToken(.access))
        #expect(await pairingError { try await store.refresh(session.accessToken.token) } == .invalidToken(.refresh))
        #expect(await pairingError { try await store.exchange(pairingToken: session.refreshToken.token) } == .invalidToken(.pairing))
        // A token with one character changed is unknown.
        var tampered = Array(session.accessToken.token)
        tampered[tampered.count - 1] = tampered.last == "A" ? "B" : "A"
        #expect(await pairingError { try await store.validateAccess(String(tampered)) } == .invalidToken(.access))
    }

    @Test("tokens expire: pairing after 1 h, access after 15 min (403), refresh after 30 days")
    func expiry() async throws {
        defer { temporary.cleanUp() }
        let store = try makeStore()
        let stale = try await store.issuePairingToken()
        clock.advance(by: .seconds(3600))
        #expect(await pairingError { try await store.exchange(pairingToken: stale.token) } == .expiredToken(.pairing))

        let session = try await pair(store)
        clock.advance(by: .seconds(899))
        _ = try await store.validateAccess(session.accessToken.token)
        clock.advance(by: .seconds(1))
        let expired = await pairingError { try await store.validateAccess(session.accessToken.token) }
        #expect(expired == .expiredToken(.access))
        #expect(expired?.httpStatus == 403)

        // The refresh token still works and brings a fresh access token.
        let renewed = try await store.refresh(session.refreshToken.token)
        _ = try await store.validateAccess(renewed.accessToken.token)

        clock.advance(by: .seconds(30 * 24 * 3600))
        #expect(await pairingError { try await store.refresh(renewed.refreshToken.token) } == .expiredToken(.refresh))
    }

    @Test("refresh rotates both tokens: the old access token is revoked, the new pair works")
    func rotation() async throws {
        defer { temporary.cleanUp() }
        let store = try makeStore()
        let first = try await pair(store)
        clock.advance(by: .seconds(60))
        let second = try await store.refresh(first.refreshToken.token, address: "10.0.0.9")
        #expect(second.deviceID == first.deviceID)
        #expect(second.accessToken.token != first.accessToken.token)
        #expect(second.refreshToken.token != first.refreshToken.token)
        #expect(second.accessToken.expiresAt == clock.wallTime.addingTimeInterval(900))
        #expect(await pairingError { try await store.validateAccess(first.accessToken.token) } == .revokedToken(.access))
        _ = try await store.validateAccess(second.accessToken.token)
        let third = try await store.refresh(second.refreshToken.token)
        _ = try await store.validateAccess(third.accessToken.token)
        #expect(try await store.listDevices().first?.lastAddress == "10.0.0.9")
    }

    @Test("reusing a rotated refresh token revokes the device's whole token family")
    func reuseDetection() async throws {
        defer { temporary.cleanUp() }
        let store = try makeStore()
        let other = try await pair(store, name: "Other phone")
        let first = try await pair(store)
        let second = try await store.refresh(first.refreshToken.token)

        let reuse = await pairingError { try await store.refresh(first.refreshToken.token) }
        #expect(reuse == .refreshTokenReused)
        #expect(reuse?.httpStatus == 403)
        // The legitimate-looking newer tokens died with the family.
        #expect(await pairingError { try await store.validateAccess(second.accessToken.token) } == .revokedToken(.access))
        #expect(await pairingError { try await store.refresh(second.refreshToken.token) } == .revokedToken(.refresh))
        // Another device's family is untouched.
        _ = try await store.validateAccess(other.accessToken.token)
        _ = try await store.refresh(other.refreshToken.token)
    }

    @Test("of N concurrent refreshes with the same token exactly one wins", arguments: [2, 8, 32])
    func concurrentRefresh(racers: Int) async throws {
        defer { temporary.cleanUp() }
        let store = try makeStore()
        let session = try await pair(store)
        let token = session.refreshToken.token
        let results = await withTaskGroup(of: Result<DeviceSession, PairingError>.self) { group in
            for _ in 0..<racers {
                group.addTask {
                    do throws(PairingError) {
                        return .success(try await store.refresh(token))
                    } catch {
                        return .failure(error)
                    }
                }
            }
            var all: [Result<DeviceSession, PairingError>] = []
            for await result in group { all.append(result) }
            return all
        }
        let winners = results.compactMap { try? $0.get() }
        #expect(winners.count == 1)
        let failures = results.compactMap { result -> PairingError? in
            if case .failure(let error) = result { return error }
            return nil
        }
        #expect(failures.count == racers - 1)
        #expect(failures.allSatisfy { $0 == .refreshTokenReused })
        // Strict reuse detection: the losers' reuse revoked the family, the winner's tokens included.
        if let winner = winners.first {
            #expect(await pairingError { try await store.validateAccess(winner.accessToken.token) } == .revokedToken(.access))
        }
    }

    @Test("concurrent refreshes through two handles on the same file (like two processes): exactly one wins")
    func concurrentRefreshAcrossHandles() async throws {
        defer { temporary.cleanUp() }
        let first = try makeStore()
        let second = try makeStore()
        let session = try await pair(first)
        let token = session.refreshToken.token
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<16 {
                let store = index.isMultiple(of: 2) ? first : second
                group.addTask { (try? await store.refresh(token)) != nil }
            }
            var wins: [Bool] = []
            for await won in group { wins.append(won) }
            return wins
        }
        #expect(outcomes.filter { $0 }.count == 1)
        #expect(outcomes.count == 16)
    }

    @Test("a new pairing token revokes the previous unexchanged one")
    func newPairingTokenRevokesOld() async throws {
        defer { temporary.cleanUp() }
        let store = try makeStore()
        let old = try await store.issuePairingToken()
        let new = try await store.issuePairingToken()
        let error = await pairingError { try await store.exchange(pairingToken: old.token) }
        #expect(error == .revokedToken(.pairing))
        #expect(error?.httpStatus == 403)
        guard case .paired = try await store.exchange(pairingToken: new.token) else {
            Issue.record("the new pairing token should pair")
            return
        }
        #expect(try await store.revokePairingTokens() == 0)
    }

    @Test("approval mode: pending until approved on the desktop, then tokens, once")
    func approvalMode() async throws {
        defer { temporary.cleanUp() }
        let store = try makeStore(requireApproval: true)
        let pairing = try await store.issuePairingToken()
        let first = try await store.exchange(pairingToken: pairing.token, deviceName: "Tablet")
        guard case .pending(let deviceID) = first else {
            Issue.record("expected pending, got \(first)")
            return
        }
        #expect(PairingError.approvalPending(deviceID: deviceID).httpStatus == 202)
        #expect(try await store.exchange(pairingToken: pairing.token, deviceID: deviceID) == .pending(deviceID: deviceID))
        // Someone else with the same (photographed) pairing code cannot ride along, with or without a guessed ID.
        #expect(await pairingError { try await store.exchange(pairingToken: pairing.token) } == .pairingTokenAlreadyUsed)
        #expect(await pairingError { try await store.exchange(pairingToken: pairing.token, deviceID: UUID().uuidString) } == .pairingTokenAlreadyUsed)
        #expect(try await store.pendingDevices().map(\.id) == [deviceID])
        // A new QR code does not strand the waiting device.
        _ = try await store.issuePairingToken()

        let approved = try await store.approve(deviceID: String(deviceID.prefix(8)))
        #expect(approved.id == deviceID && approved.approved)
        #expect(try await store.pendingDevices().isEmpty)
        #expect(await pairingError { try await store.exchange(pairingToken: pairing.token) } == .pairingTokenAlreadyUsed)
        guard case .paired(let session) = try await store.exchange(pairingToken: pairing.token, deviceID: deviceID.uppercased()) else {
            Issue.record("expected tokens after approval")
            return
        }
        #expect(session.deviceID == deviceID)
        _ = try await store.validateAccess(session.accessToken.token)
        #expect(await pairingError { try await store.exchange(pairingToken: pairing.token) } == .pairingTokenAlreadyUsed)
    }

    @Test("approval mode: revoking a pending device denies it")
    func denyPending() async throws {
        defer { temporary.cleanUp() }
        let store = try makeStore(requireApproval: true)
        let pairing = try await store.issuePairingToken()
        guard case .pending(let deviceID) = try await store.exchange(pairingToken: pairing.token) else {
            Issue.record("expected pending")
            return
        }
        try await store.revoke(deviceID: deviceID)
        #expect(await pairingError { try await store.exchange(pairingToken: pairing.token, deviceID: deviceID) } == .deviceRevoked(deviceID: deviceID))
        #expect(await pairingError { try await store.approve(deviceID: deviceID) } == .deviceRevoked(deviceID: deviceID))
    }

    @Test("device IDs resolve by unique prefix; unknown and ambiguous prefixes are explained")
    func deviceLookup() async throws {
        defer { temporary.cleanUp() }
        let store = try makeStore()
        var ids: [String] = []
        for _ in 0..<20 { ids.append(try await pair(store).deviceID) }
        #expect(await pairingError { try await store.revoke(deviceID: "zzz") } == .unknownDevice("zzz"))
        #expect(await pairingError { try await store.revoke(deviceID: "%") } == .unknownDevice("%"))
        // With 20 random UUIDs some one-character prefix is shared by at least two (pigeonhole over 16 digits).
        let groups = Dictionary(grouping: ids, by: { String($0.prefix(1)) })
        if let shared = groups.first(where: { $0.value.count > 1 })?.key {
            #expect(await pairingError { try await store.revoke(deviceID: shared) } == .ambiguousDevice(shared))
        } else {
            Issue.record("pigeonhole violated: \(ids)")
        }
        let revoked = try await store.revoke(deviceID: ids[3].uppercased())
        #expect(revoked.id == ids[3] && revoked.isRevoked)
    }

    @Test("revoking a device and revoking all persist across reopening the store")
    func revocationPersists() async throws {
        defer { temporary.cleanUp() }
        var store: TokenStore? = try makeStore()
        guard let opened = store else { return }
        let alice = try await pair(opened, name: "Alice")
        let bob = try await pair(opened, name: "Bob")
        let carol = try await pair(opened, name: "Carol")
        try await opened.revoke(deviceID: alice.deviceID)
        // A second handle (like `oa-bridge devices revoke` in another process) sees it at once.
        let sibling = try makeStore()
        #expect(await pairingError { try await sibling.validateAccess(alice.accessToken.token) } == .deviceRevoked(deviceID: alice.deviceID))
        store = nil

        let reopened = try makeStore()
        #expect(await pairingError { try await reopened.validateAccess(alice.accessToken.token) } == .deviceRevoked(deviceID: alice.deviceID))
        #expect(await pairingError { try await reopened.refresh(alice.refreshToken.token) } == .deviceRevoked(deviceID: alice.deviceID))
        _ = try await reopened.validateAccess(bob.accessToken.token)

        let revokedIDs = try await reopened.revokeAllDevices()
        #expect(Set(revokedIDs) == [bob.deviceID, carol.deviceID])
        let again = try makeStore()
        for session in [bob, carol] {
            let error = await pairingError { try await again.validateAccess(session.accessToken.token) }
            #expect(error == .deviceRevoked(deviceID: session.deviceID))
            #expect(error?.httpStatus == 403)
        }
        let devices = try await again.listDevices()
        #expect(devices.count == 3 && devices.allSatisfy(\.isRevoked))
        #expect(try await again.listDevices(includeRevoked: false).isEmpty)
    }

    @Test("revocations from another handle reach the revocation stream once each", .timeLimit(.minutes(1)))
    func revocationStream() async throws {
        defer { temporary.cleanUp() }
        let server = try makeStore()
        let cli = try makeStore()
        let early = try await pair(server)
        try await cli.revoke(deviceID: early.deviceID)  // before the stream starts: not reported
        clock.advance(by: .seconds(1))
        let alice = try await pair(server)
        let bob = try await pair(server)
        let stream = server.revocations(pollingEvery: .milliseconds(20))
        try await cli.revoke(deviceID: alice.deviceID)
        try await cli.revokeAllDevices()
        var seen: [String] = []
        for await id in stream {
            seen.append(id)
            if seen.count == 2 { break }
        }
        #expect(Set(seen) == [alice.deviceID, bob.deviceID])
    }

    @Test("the state directory is 0700 and the database files 0600, even if the directory existed with 0755")
    func fileModes() async throws {
        defer { temporary.cleanUp() }
        try FileManager.default.createDirectory(at: temporary.stateDirectory, withIntermediateDirectories: true)
        chmod(temporary.stateDirectory.path, 0o755)
        let store = try makeStore()
        _ = try await pair(store)
        #expect(StateDirectory.permissions(ofPath: temporary.stateDirectory.path) == 0o700)
        #expect(StateDirectory.permissions(ofPath: store.databaseURL.path) == 0o600)
        let wal = store.databaseURL.path + "-wal"
        #expect(FileManager.default.fileExists(atPath: wal))
        #expect(StateDirectory.permissions(ofPath: wal) == 0o600)
        #expect(StateDirectory.permissions(ofPath: store.databaseURL.path + "-shm") == 0o600)
    }

    @Test("the database files hold hashes, never a token in clear")
    func onlyHashesOnDisk() async throws {
        defer { temporary.cleanUp() }
        let store = try makeStore()
        let pairing = try await store.issuePairingToken()
        guard case .paired(let session) = try await store.exchange(pairingToken: pairing.token) else {
            Issue.record("expected tokens")
            return
        }
        let rotated = try await store.refresh(session.refreshToken.token)
        let files = [store.databaseURL.path, store.databaseURL.path + "-wal", store.databaseURL.path + "-shm"]
        let bytes = files.flatMap { fileBytes(URL(fileURLWithPath: $0)) }
        #expect(bytes.count > 0)
        let tokens = [pairing.token, session.accessToken.token, session.refreshToken.token, rotated.accessToken.token, rotated.refreshToken.token]
        for token in tokens {
            #expect(!contains(bytes, Array(token.utf8)), "a \(TokenKind(token: token)?.rawValue ?? "") token is stored in clear")
            // Not even the random body without its prefix.
            #expect(!contains(bytes, Array(token.utf8.dropFirst(5))))
            // The search is meaningful: the hash of each token is there.
            #expect(contains(bytes, Array(TokenSecret.hash(token))))
        }
    }

    @Test("state directory follows XDG_STATE_HOME, then ~/.local/state, unless overridden")
    func stateDirectoryResolution() {
        #expect(StateDirectory.resolve(environment: ["XDG_STATE_HOME": "/x/state", "HOME": "/home/u"]).path == "/x/state/oa-bridge")
        #expect(StateDirectory.resolve(environment: ["XDG_STATE_HOME": "relative", "HOME": "/home/u"]).path == "/home/u/.local/state/oa-bridge")
        #expect(StateDirectory.resolve(environment: ["HOME": "/home/u"]).path == "/home/u/.local/state/oa-bridge")
        #expect(StateDirectory.resolve(override: "/srv/oa", environment: ["HOME": "/home/u"]).path == "/srv/oa")
    }

    @Test("an unusable state directory gives an actionable storage error")
    func unusableDirectory() throws {
        defer { temporary.cleanUp() }
        let file = temporary.url.appendingPathComponent("not-a-dir")
        try Data("x".utf8).write(to: file)
        #expect {
            _ = try TokenStore(directory: file, clock: TokenClock(clock))
        } throws: { error in
            guard let error = error as? PairingError, case .storage(let failure) = error else { return false }
            return failure.path == file.path && failure.cause == .notADirectory
        }
    }

    @Test("device names are sanitised")
    func deviceNames() async throws {
        defer { temporary.cleanUp() }
        let store = try makeStore()
        let token = TokenSecret.generate(.access)
        let session = try await pair(store, name: "  Evil\u{7}\nName \(token) " + String(repeating: "x", count: 100))
        let device = try await store.listDevices().first { $0.id == session.deviceID }
        #expect(device?.name.contains(token) == false)
        #expect(device?.name.hasPrefix("EvilName oa_s_***") == true)
        #expect((device?.name.count ?? 0) <= 64)
        let unnamed = try await pair(store, name: " ")
        #expect(try await store.listDevices().first { $0.id == unnamed.deviceID }?.name == "Phone")
    }
}
