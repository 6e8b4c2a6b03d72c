import BridgePairing
import BridgeTestKit
import Foundation
import Synchronization
import Testing

/// Issue 16, item 4: every revocation that must close sockets is reported — device, family (refresh-token reuse),
/// all devices, logout — at once in this process and by polling from another; `me` and `logout` on the store.
@Suite("Revocation events, account and logout", .timeLimit(.minutes(1)), .tags(.unit))
struct RevocationEventsTests {
    let temporary = TemporaryDirectory()
    let clock = ManualBridgeClock(wallStart: .pairingTestStart)

    func makeStore() throws -> TokenStore {
        try TokenStore(directory: temporary.stateDirectory, clock: TokenClock(clock))
    }

    func pair(_ store: TokenStore, name: String = "phone") async throws -> DeviceSession {
        let pairing = try await store.issuePairingToken()
        guard case .paired(let session) = try await store.exchange(pairingToken: pairing.token, deviceName: name) else {
            throw PairingError.storage(PairingStorageFailure(.read, path: "pairing.sqlite", cause: .other("not paired")))
        }
        return session
    }

    /// The first `count` events of `stream`, or those that came within `seconds` if fewer.
    func first(_ count: Int, of stream: AsyncStream<TokenRevocation>, within seconds: Int = 10) async -> [TokenRevocation] {
        await collect(stream, within: seconds) { $0.count >= count }
    }

    /// The stream's events until `done` holds for them (or `seconds` pass), then for `settle` more, to catch any that
    /// must not come (a revocation reported twice).
    func collect(
        _ stream: AsyncStream<TokenRevocation>, within seconds: Int = 10, settle: Duration = .zero,
        until done: @escaping @Sendable ([TokenRevocation]) -> Bool
    ) async -> [TokenRevocation] {
        let seen = Mutex<[TokenRevocation]>([])
        let changes = ChangeSignal()
        let collector = Task {
            for await event in stream {
                let finished = seen.withLock {
                    $0.append(event)
                    return done($0)
                }
                changes.notify()
                if finished, settle == .zero { return }
            }
        }
        defer { collector.cancel() }
        _ = await changes.wait(timeout: .seconds(seconds)) { done(seen.withLock { $0 }) }
        if settle > .zero {
            // A window in which nothing more may come: it ends early only if something does.
            let count = seen.withLock { $0.count }
            _ = await changes.wait(timeout: settle) { seen.withLock { $0.count } > count }
        }
        return seen.withLock { $0 }
    }

    @Test("an access token knows its family; a refresh keeps it, a new pairing gets another")
    func families() async throws {
        defer { temporary.cleanUp() }
        let store = try makeStore()
        let phone = try await pair(store)
        let first = try await store.validateAccess(phone.accessToken.token)
        let rotated = try await store.refresh(phone.refreshToken.token)
        let second = try await store.validateAccess(rotated.accessToken.token)
        let other = try await store.validateAccess(try await pair(store).accessToken.token)
        #expect(first.familyID != nil)
        #expect(first.familyID == second.familyID)
        #expect(other.familyID != first.familyID)
    }

    @Test("this process's revocations are reported at once, without waiting for the poll")
    func inProcessAtOnce() async throws {
        defer { temporary.cleanUp() }
        let store = try makeStore()
        let owner = try await pair(store)
        let family = try #require(try await store.validateAccess(owner.accessToken.token).familyID)
        let other = try await pair(store)
        let third = try await pair(store)
        // An hour between polls: only the immediate report can arrive within the test's 10 s.
        let stream = store.revocationEvents(pollingEvery: .seconds(3600))
        _ = try await store.refresh(owner.refreshToken.token)                           // the thief
        await #expect(throws: PairingError.refreshTokenReused) { try await store.refresh(owner.refreshToken.token) }
        try await store.revoke(deviceID: other.deviceID)
        _ = try await store.logout(try await store.validateAccess(third.accessToken.token))
        let seen = await first(3, of: stream)
        #expect(seen == [.family(family), .device(other.deviceID), .device(third.deviceID)])
    }

    @Test("another process's revocations of devices and families are found by polling, each once")
    func otherProcessPolled() async throws {
        defer { temporary.cleanUp() }
        let server = try makeStore()
        let cli = try makeStore()
        let owner = try await pair(server)
        let family = try #require(try await server.validateAccess(owner.accessToken.token).familyID)
        let other = try await pair(server)
        let otherFamily = try #require(try await server.validateAccess(other.accessToken.token, touch: false).familyID)
        let stream = server.revocationEvents(pollingEvery: .milliseconds(20))
        clock.advance(by: .seconds(1))
        _ = try await cli.refresh(owner.refreshToken.token)
        await #expect(throws: PairingError.refreshTokenReused) { try await cli.refresh(owner.refreshToken.token) }
        clock.advance(by: .seconds(1))
        try await cli.revokeAllDevices()
        // The owner's family (reuse), then both devices and the other device's family (revoke-all); waits 3 s for a
        // fifth that must not come (the poll reports each revocation once).
        let seen = await first(5, of: stream, within: 3)
        #expect(seen.first == .family(family))
        #expect(Set(seen) == [.family(family), .device(owner.deviceID), .device(other.deviceID), .family(otherFamily)])
        #expect(seen.count == 4, "each revocation once: \(seen)")
    }

    @Test("the poll reports what was revoked at the watermark's own time once, and nothing older")
    func watermark() async throws {
        defer { temporary.cleanUp() }
        let server = try makeStore()
        let early = try await pair(server)
        try await server.revoke(deviceID: early.deviceID)          // before the stream: not reported by the poll
        clock.advance(by: .seconds(1))
        let cli = try makeStore()
        let a = try await pair(server)
        let b = try await pair(server)
        let stream = server.revocationEvents(pollingEvery: .milliseconds(20))
        try await cli.revoke(deviceID: a.deviceID)                  // same clock time as the stream's start
        try await cli.revoke(deviceID: b.deviceID)
        // Until both are seen (a loaded CI machine has delayed the poll past 2 s), then 1 s more for a second report.
        let both: Set<TokenRevocation> = [.device(a.deviceID), .device(b.deviceID)]
        let seen = await collect(stream, within: 20, settle: .seconds(1)) { both.isSubset(of: Set($0)) }
        #expect(Set(seen).contains(.device(a.deviceID)) && Set(seen).contains(.device(b.deviceID)))
        #expect(!seen.contains(.device(early.deviceID)))
        #expect(seen.filter { $0 == .device(a.deviceID) }.count == 1)
    }

    @Test("account: id, name, paired-at, last-seen, token expiry; logout revokes every family of the device")
    func accountAndLogout() async throws {
        defer { temporary.cleanUp() }
        let store = try makeStore()
        let phone = try await pair(store, name: "Pixel 8")
        let device = try await store.validateAccess(phone.accessToken.token)
        let account = try await store.account(of: device)
        #expect(account.deviceID == phone.deviceID)
        #expect(account.name == "Pixel 8")
        #expect(account.accessTokenExpiresAt == phone.accessToken.expiresAt)
        #expect(account.lastSeenAt != nil)
        let json = String(decoding: try PairingJSON.encoder.encode(account), as: UTF8.self)
        #expect(!json.contains("oa_"))
        #expect(json.contains("\"paired_at\""))
        let revoked = try await store.logout(device)
        #expect(revoked.isRevoked)
        #expect(await pairingError { try await store.validateAccess(phone.accessToken.token) } == .deviceRevoked(deviceID: phone.deviceID))
        #expect(await pairingError { try await store.refresh(phone.refreshToken.token) } == .deviceRevoked(deviceID: phone.deviceID))
        #expect(await pairingError { try await store.account(of: device) } == .deviceRevoked(deviceID: phone.deviceID))
    }

    @Test("ManualBridgeClock is shared safely across tasks")
    func manualClock() async {
        let clock = ManualBridgeClock(wallStart: Date(timeIntervalSince1970: 0))
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<100 { group.addTask { clock.advance(by: .seconds(1)) } }
        }
        #expect(clock.wallTime == Date(timeIntervalSince1970: 100))
    }
}
