public import Foundation
import GRDB
public import Logging
import Synchronization

/// Settings of a ``TokenStore``.
public struct TokenStoreConfiguration: Sendable {
    /// How long each kind of token lives.
    public var lifetimes: TokenLifetimes
    /// Approval mode (`--require-approval`): a new device gets tokens only after ``TokenStore/approve(deviceID:)``.
    public var requireApproval: Bool
    /// How long to wait for another process (for example `oa-bridge devices revoke`) holding the database lock.
    public var busyTimeout: TimeInterval

    /// A configuration; defaults: documented lifetimes, no approval, 10 s busy timeout.
    public init(lifetimes: TokenLifetimes = TokenLifetimes(), requireApproval: Bool = false, busyTimeout: TimeInterval = 10) {
        self.lifetimes = lifetimes
        self.requireApproval = requireApproval
        self.busyTimeout = busyTimeout
    }
}

/// Paired devices and their tokens in a SQLite database (WAL mode) that holds only SHA-256 hashes of tokens.
///
/// Every operation is one `BEGIN IMMEDIATE` transaction, so concurrent callers in this process (and other processes
/// such as `oa-bridge devices revoke`) see each other's changes atomically: of N concurrent refreshes with the same
/// refresh token exactly one rotates it; the others see it as already rotated.
///
/// Refresh-token reuse: presenting a refresh token that was already rotated revokes every token of that device's
/// token family (the access and refresh tokens descended from the same pairing). This is strict on purpose: a
/// client must not retry a refresh with the old token; if a refresh answer is lost, the phone pairs again.
public final class TokenStore: Sendable {
    /// File name of the database inside the state directory.
    public static let databaseFileName = "pairing.sqlite"

    /// The directory holding the database (mode 0700).
    public let directory: URL
    /// The database file (mode 0600).
    public let databaseURL: URL
    /// The settings in force.
    public let configuration: TokenStoreConfiguration

    private let pool: DatabasePool
    private let clock: TokenClock
    private let logger: Logger
    /// Streams of ``revocationEvents(pollingEvery:)`` that are told at once about revocations made in this process.
    private let listeners = RevocationListeners()

    /// Opens (creating if needed) the store in `directory` (see ``StateDirectory/resolve(override:environment:)``),
    /// making the directory 0700 and the database file 0600.
    public init(
        directory: URL,
        configuration: TokenStoreConfiguration = TokenStoreConfiguration(),
        clock: TokenClock = .system,
        logger: Logger = Logger(label: "oa-bridge.pairing")
    ) throws(PairingError) {
        self.directory = directory
        self.databaseURL = directory.appendingPathComponent(Self.databaseFileName, isDirectory: false)
        self.configuration = configuration
        self.clock = clock
        self.logger = logger

        try StateDirectory.prepare(directory)
        try StateDirectory.preparePrivateFile(databaseURL)

        var config = Configuration()
        config.label = "oa-bridge.pairing"
        config.busyMode = .timeout(configuration.busyTimeout)
        config.foreignKeysEnabled = true
        do {
            pool = try DatabasePool(path: databaseURL.path, configuration: config)
            try Self.migrator.migrate(pool)
        } catch {
            throw .storage(PairingStorageFailure(.open, path: databaseURL.path, error: error))
        }
        for suffix in ["-wal", "-shm"] {
            try StateDirectory.restrictIfPresent(URL(fileURLWithPath: databaseURL.path + suffix))
        }
    }

    // MARK: - Pairing tokens

    /// Issues a new pairing token (for the QR code) and revokes every earlier pairing token not yet exchanged.
    ///
    /// Pairing tokens already bound to a device waiting for approval stay valid until they expire, so that
    /// device can still complete its exchange once approved.
    public func issuePairingToken() async throws(PairingError) -> IssuedToken {
        let now = clock.now()
        let token = TokenSecret.generate(.pairing)
        let hash = TokenSecret.hash(token)
        let expires = now.addingTimeInterval(configuration.lifetimes.pairing)
        try await transaction { db in
            try db.execute(
                sql: """
                    UPDATE token SET revoked_at = ?
                    WHERE kind = 'pairing' AND device_id IS NULL AND used_at IS NULL AND revoked_at IS NULL
                    """,
                arguments: [now.timeIntervalSince1970])
            try Self.insertToken(db, hash: hash, kind: .pairing, deviceID: nil, familyID: nil, now: now, expires: expires)
        }
        logger.info("issued a new pairing token", metadata: ["expires": "\(expires)"])
        return IssuedToken(token: token, kind: .pairing, expiresAt: expires)
    }

    /// Revokes every pairing token that was not exchanged yet (including those bound to devices awaiting approval).
    ///
    /// Returns how many were revoked.
    @discardableResult
    public func revokePairingTokens() async throws(PairingError) -> Int {
        let now = clock.now()
        return try await transaction { db in
            try db.execute(
                sql: "UPDATE token SET revoked_at = ? WHERE kind = 'pairing' AND used_at IS NULL AND revoked_at IS NULL",
                arguments: [now.timeIntervalSince1970])
            return db.changesCount
        }
    }

    /// Exchanges a pairing token for a new device's access and refresh tokens (the pairing token is then used up).
    ///
    /// In approval mode the first call registers the device and answers ``ExchangeOutcome/pending(deviceID:)``; the
    /// pairing token is then claimed by that device. Calling again with the same pairing token *and that device ID*
    /// answers pending until ``approve(deviceID:)``, then the tokens. Anyone else presenting the claimed token (say,
    /// someone who photographed the QR code) gets ``PairingError/pairingTokenAlreadyUsed``: the device ID, which only
    /// the first client learned, is the claim check.
    /// - Parameters:
    ///   - pairingToken: the `oa_p_…` token from the QR code.
    ///   - deviceName: a name for `devices list`; sanitised and shortened; "Phone" when absent.
    ///   - address: the client's source address, recorded as the device's last address.
    ///   - claimedDeviceID: when polling in approval mode, the device ID from the first (pending) answer.
    ///   - dpopThumbprint: the RFC 7638 thumbprint of the key whose DPoP proof came with the exchange: the new token
    ///     family is bound to it (kept across refreshes); nil for an unbound family.
    /// - Returns: ``ExchangeOutcome/paired(_:)`` with the device's tokens, or ``ExchangeOutcome/pending(deviceID:)`` in
    ///   approval mode.
    /// - Throws: ``PairingError/missingToken``, ``PairingError/invalidToken(_:)``, ``PairingError/expiredToken(_:)``,
    ///   ``PairingError/revokedToken(_:)``, ``PairingError/pairingTokenAlreadyUsed``,
    ///   ``PairingError/deviceRevoked(deviceID:)``, ``PairingError/storage(_:)``.
    public func exchange(
        pairingToken: String, deviceName: String? = nil, address: String? = nil, deviceID claimedDeviceID: String? = nil,
        dpopThumbprint: String? = nil
    ) async throws(PairingError) -> ExchangeOutcome {
        let hash = try Self.checkedHash(pairingToken, kind: .pairing)
        let now = clock.now()
        let name = Self.sanitizedName(deviceName)
        let requireApproval = configuration.requireApproval
        let lifetimes = configuration.lifetimes
        let result: Result<ExchangeOutcome, PairingError> = try await transaction { db in
            guard let row = try Self.fetchToken(db, hash: hash, kind: .pairing) else {
                return .failure(.invalidToken(.pairing))
            }
            if let bound = row.deviceID, row.usedAt == nil {
                // Claimed by a device awaiting approval: only that device may continue.
                guard let claimed = claimedDeviceID?.lowercased(), TokenSecret.constantTimeEquals(claimed, bound) else {
                    return .failure(.pairingTokenAlreadyUsed)
                }
                if let device = try Self.fetchDevice(db, id: bound), device.isRevoked {
                    return .failure(.deviceRevoked(deviceID: bound))
                }
            }
            if row.revokedAt != nil { return .failure(.revokedToken(.pairing)) }
            if row.usedAt != nil { return .failure(.pairingTokenAlreadyUsed) }
            if row.expiresAt <= now { return .failure(.expiredToken(.pairing)) }

            let deviceID: String
            if let bound = row.deviceID {
                guard let device = try Self.fetchDevice(db, id: bound) else { return .failure(.invalidToken(.pairing)) }
                if device.isRevoked { return .failure(.deviceRevoked(deviceID: bound)) }
                try Self.touch(db, deviceID: bound, now: now, address: address)
                if !device.approved { return .success(.pending(deviceID: bound)) }
                deviceID = bound
            } else {
                deviceID = UUID().uuidString.lowercased()
                try db.execute(
                    sql: """
                        INSERT INTO device (id, name, created_at, last_seen_at, last_address, approved, revoked_at)
                        VALUES (?, ?, ?, ?, ?, ?, NULL)
                        """,
                    arguments: [deviceID, name, now.timeIntervalSince1970, now.timeIntervalSince1970, address, !requireApproval])
                try db.execute(sql: "UPDATE token SET device_id = ? WHERE hash = ?", arguments: [deviceID, hash])
                if requireApproval { return .success(.pending(deviceID: deviceID)) }
            }
            try db.execute(
                sql: "UPDATE token SET used_at = ?, device_id = ? WHERE hash = ?",
                arguments: [now.timeIntervalSince1970, deviceID, hash])
            let session = try Self.issueSession(
                db, deviceID: deviceID, familyID: UUID().uuidString.lowercased(), now: now, lifetimes: lifetimes,
                dpopThumbprint: dpopThumbprint)
            return .success(.paired(session))
        }
        switch result {
        case .success(.paired(let session)):
            logger.info("device paired", metadata: [
                "device": "\(session.deviceID)", "address": "\(address ?? "-")", "dpop": "\(session.dpopThumbprint == nil ? "unbound" : "bound")",
            ])
        case .success(.pending(let deviceID)):
            logger.notice("device waits for approval", metadata: ["device": "\(deviceID)", "address": "\(address ?? "-")"])
        case .failure(let error):
            logger.info("pairing exchange refused", metadata: ["reason": "\(error.code)", "address": "\(address ?? "-")"])
        }
        return try result.get()
    }

    // MARK: - Access and refresh

    /// Checks an access token and returns its device; records the device's last-seen time and address when `touch`.
    ///
    /// - Throws: 401 class: ``PairingError/missingToken``, ``PairingError/invalidToken(_:)``;
    ///   403 class: ``PairingError/expiredToken(_:)``, ``PairingError/revokedToken(_:)``,
    ///   ``PairingError/deviceRevoked(deviceID:)``; or ``PairingError/storage(_:)``.
    ///
    /// With `dpop` (a ``DPoPUse``), the token family's binding is checked against the proof's key before anything is
    /// recorded: ``PairingError/dpop(_:)`` when it does not hold (RFC 9449 §7).
    public func validateAccess(
        _ accessToken: String, address: String? = nil, touch: Bool = true, dpop: DPoPUse? = nil
    ) async throws(PairingError) -> AuthenticatedDevice {
        let hash = try Self.checkedHash(accessToken, kind: .access)
        let now = clock.now()
        let check: @Sendable (Database) throws -> Result<AuthenticatedDevice, PairingError> = { db in
            guard let row = try Self.fetchToken(db, hash: hash, kind: .access),
                  let deviceID = row.deviceID,
                  let device = try Self.fetchDevice(db, id: deviceID)
            else { return .failure(.invalidToken(.access)) }
            if device.isRevoked { return .failure(.deviceRevoked(deviceID: deviceID)) }
            if row.revokedAt != nil { return .failure(.revokedToken(.access)) }
            if row.expiresAt <= now { return .failure(.expiredToken(.access)) }
            if !device.approved { return .failure(.approvalPending(deviceID: deviceID)) }
            if let dpop, let refusal = DPoPBinding.checkUse(
                mode: dpop.mode, bound: row.dpopThumbprint, presented: dpop.thumbprint, asBearer: dpop.asBearer) {
                return .failure(.dpop(refusal))
            }
            if touch { try Self.touch(db, deviceID: deviceID, now: now, address: address) }
            return .success(AuthenticatedDevice(
                deviceID: deviceID, deviceName: device.name, accessTokenExpiresAt: row.expiresAt, familyID: row.familyID,
                dpopThumbprint: dpop?.mode == .off ? nil : row.dpopThumbprint))
        }
        // A check that records nothing (e.g. the periodic re-check of an open WebSocket) only needs a read.
        return try await (touch ? transaction(check) : read(check)).get()
    }

    /// Rotates a refresh token: in one transaction marks it used, revokes the family's access tokens, and issues a
    /// new access and refresh token.
    ///
    /// Presenting a refresh token that was already rotated is treated as theft: every token of its family is revoked
    /// and ``PairingError/refreshTokenReused`` is thrown.
    ///
    /// In DPoP `mode` (not off), a bound family's refresh needs a proof by its key (`dpopThumbprint`, the proof's key),
    /// checked before anything changes, so a copied refresh token without the key rotates nothing; the new tokens stay
    /// bound to the same key. Reuse is checked before the binding: an already rotated token revokes its family with
    /// any proof or none. With ``DPoPMode/required`` an unbound family is refused.
    public func refresh(
        _ refreshToken: String, address: String? = nil, dpopMode: DPoPMode = .off, dpopThumbprint: String? = nil
    ) async throws(PairingError) -> DeviceSession {
        let hash = try Self.checkedHash(refreshToken, kind: .refresh)
        let now = clock.now()
        let lifetimes = configuration.lifetimes
        let result: Result<DeviceSession, PairingError> = try await transaction { db in
            guard let row = try Self.fetchToken(db, hash: hash, kind: .refresh),
                  let deviceID = row.deviceID,
                  let familyID = row.familyID,
                  let device = try Self.fetchDevice(db, id: deviceID)
            else { return .failure(.invalidToken(.refresh)) }
            if device.isRevoked { return .failure(.deviceRevoked(deviceID: deviceID)) }
            // Reuse first, whatever the proof: a rotated token presented again means it was copied (issue 30).
            if row.usedAt != nil {
                try Self.revokeFamily(db, familyID: familyID, now: now)
                return .failure(.refreshTokenReused)
            }
            if let refusal = DPoPBinding.checkRefresh(mode: dpopMode, bound: row.dpopThumbprint, presented: dpopThumbprint) {
                return .failure(.dpop(refusal))
            }
            if row.revokedAt != nil { return .failure(.revokedToken(.refresh)) }
            if row.expiresAt <= now { return .failure(.expiredToken(.refresh)) }
            try db.execute(
                sql: "UPDATE token SET used_at = ? WHERE hash = ? AND used_at IS NULL",
                arguments: [now.timeIntervalSince1970, hash])
            guard db.changesCount == 1 else { return .failure(.refreshTokenReused) }
            try db.execute(
                sql: "UPDATE token SET revoked_at = ? WHERE family_id = ? AND kind = 'access' AND revoked_at IS NULL",
                arguments: [now.timeIntervalSince1970, familyID])
            try Self.touch(db, deviceID: deviceID, now: now, address: address)
            return .success(try Self.issueSession(
                db, deviceID: deviceID, familyID: familyID, now: now, lifetimes: lifetimes, dpopThumbprint: row.dpopThumbprint))
        }
        if case .failure(.refreshTokenReused) = result { await announceReuse(hash: hash, address: address) }
        return try result.get()
    }

    /// Reuse detection alone, for a refresh refused before the store was asked (its DPoP proof failed): when
    /// `refreshToken` was already rotated, revokes its family as ``refresh(_:address:dpopMode:dpopThumbprint:)`` does
    /// and returns true; false for any other token (nothing changes).
    public func revokeFamilyIfReused(_ refreshToken: String, address: String? = nil) async throws(PairingError) -> Bool {
        guard let hash = try? Self.checkedHash(refreshToken, kind: .refresh) else { return false }
        let now = clock.now()
        let reused: Bool = try await transaction { db in
            guard let row = try Self.fetchToken(db, hash: hash, kind: .refresh), row.usedAt != nil,
                  let familyID = row.familyID
            else { return false }
            try Self.revokeFamily(db, familyID: familyID, now: now)
            return true
        }
        if reused { await announceReuse(hash: hash, address: address) }
        return reused
    }

    private static func revokeFamily(_ db: Database, familyID: String, now: Date) throws {
        try db.execute(
            sql: "UPDATE token SET revoked_at = ? WHERE family_id = ? AND revoked_at IS NULL",
            arguments: [now.timeIntervalSince1970, familyID])
    }

    private func announceReuse(hash: Data, address: String?) async {
        logger.warning(
            "a rotated refresh token was presented again; revoked the device's token family",
            metadata: ["address": "\(address ?? "-")"])
        if let family = try? await familyOf(refreshTokenHash: hash) { listeners.publish([.family(family)]) }
    }

    // MARK: - Devices

    /// All devices, oldest first; revoked devices only when `includeRevoked`.
    public func listDevices(includeRevoked: Bool = true) async throws(PairingError) -> [DeviceRecord] {
        try await read { db in
            // A device is bound when a refresh token it still holds is bound to a key.
            let bound = """
                EXISTS (SELECT 1 FROM token WHERE token.device_id = device.id AND kind = 'refresh' \
                AND dpop_jkt IS NOT NULL AND revoked_at IS NULL AND used_at IS NULL) AS dpop_bound
                """
            let sql = includeRevoked
                ? "SELECT *, \(bound) FROM device ORDER BY created_at, id"
                : "SELECT *, \(bound) FROM device WHERE revoked_at IS NULL ORDER BY created_at, id"
            return try Row.fetchAll(db, sql: sql).map(Self.device(from:))
        }
    }

    /// The device with exactly this ID, or `nil`.
    public func device(id: String) async throws(PairingError) -> DeviceRecord? {
        try await read { db in try Self.fetchDevice(db, id: id) }
    }

    /// The device whose ID is `idOrPrefix` or starts with it, as ``approve(deviceID:)`` and ``revoke(deviceID:)``
    /// find it; throws ``PairingError/unknownDevice(_:)`` or ``PairingError/ambiguousDevice(_:)`` otherwise.
    public func findDevice(idOrPrefix: String) async throws(PairingError) -> DeviceRecord {
        try await read { db in try Self.resolveDevice(db, idOrPrefix: idOrPrefix) }.get()
    }

    /// IDs of devices revoked at or after `date`, so a server can close their WebSockets (code 4003) even when the
    /// revocation came from another process such as `oa-bridge devices revoke`.
    ///
    /// Poll it, for example every second.
    public func devicesRevoked(since date: Date) async throws(PairingError) -> [String] {
        try await read { db in
            try String.fetchAll(
                db, sql: "SELECT id FROM device WHERE revoked_at >= ? ORDER BY revoked_at, id",
                arguments: [date.timeIntervalSince1970])
        }
    }

    /// Device IDs as they are revoked from now on, by this process or another (`oa-bridge devices revoke`), found by
    /// polling the database every `interval`.
    ///
    /// Each ID is yielded once. The server closes that device's WebSockets (code 4003) for each. The stream ends
    /// when the consuming task is cancelled.
    public func revocations(pollingEvery interval: Duration = .seconds(1)) -> AsyncStream<String> {
        let start = clock.now()
        return AsyncStream { continuation in
            let task = Task {
                var reported = Set<String>()
                while !Task.isCancelled {
                    if let ids = try? await self.devicesRevoked(since: start) {
                        for id in ids where reported.insert(id).inserted {
                            continuation.yield(id)
                        }
                    }
                    try? await Task.sleep(for: interval)
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Every revocation that must close WebSockets, from now on: at once for those made through this store (device
    /// revocation, `revokeAllDevices`, logout, refresh-token reuse), and within `interval` for those made by another
    /// process on the same database (`oa-bridge devices revoke`, `--all`), found by polling.
    ///
    /// A revocation may be reported twice (once at once, once by the poll); closing is idempotent. Memory stays
    /// bounded however long it runs. The stream ends when the consuming task is cancelled.
    public func revocationEvents(pollingEvery interval: Duration = .milliseconds(500)) -> AsyncStream<TokenRevocation> {
        let start = clock.now()
        let (stream, continuation) = AsyncStream.makeStream(of: TokenRevocation.self)
        let key = listeners.add(continuation)
        let task = Task {
            var watermark = RevocationWatermark(since: start)
            while !Task.isCancelled {
                // Sleep first: at the start there is nothing another process revoked since the start.
                try? await Task.sleep(for: interval)
                if let rows = try? await self.revocationsRecorded(since: watermark.since) {
                    for revocation in watermark.advance(with: rows) { continuation.yield(revocation) }
                }
            }
            continuation.finish()
        }
        continuation.onTermination = { [listeners] _ in
            task.cancel()
            listeners.remove(key)
        }
        return stream
    }

    /// Devices and token families revoked at or after `date`, with when, oldest first: what another process may have
    /// revoked.
    ///
    /// A family counts as revoked when one of its refresh tokens is (a rotation only revokes access tokens).
    func revocationsRecorded(since date: Date) async throws(PairingError) -> [(TokenRevocation, Date)] {
        try await read { db in
            let seconds = date.timeIntervalSince1970
            let devices = try Row.fetchAll(
                db, sql: "SELECT id, revoked_at FROM device WHERE revoked_at >= ?", arguments: [seconds]
            ).map { row -> (TokenRevocation, Date) in (.device(row["id"]), Date(timeIntervalSince1970: row["revoked_at"])) }
            let families = try Row.fetchAll(
                db,
                sql: """
                    SELECT family_id, MIN(revoked_at) AS revoked_at FROM token
                    WHERE kind = 'refresh' AND family_id IS NOT NULL AND revoked_at >= ? GROUP BY family_id
                    """,
                arguments: [seconds]
            ).map { row -> (TokenRevocation, Date) in (.family(row["family_id"]), Date(timeIntervalSince1970: row["revoked_at"])) }
            return (devices + families).sorted { $0.1 < $1.1 }
        }
    }

    /// The family of a refresh token, by its hash, if that token is revoked (its family was revoked).
    private func familyOf(refreshTokenHash hash: Data) async throws(PairingError) -> String? {
        try await read { db in
            guard let row = try Self.fetchToken(db, hash: hash, kind: .refresh), row.revokedAt != nil else { return nil }
            return row.familyID
        }
    }

    /// Revokes the device an access token belongs to (`POST /api/logout`): the device and all its token families,
    /// permanently, as ``revoke(deviceID:)`` does; its open WebSockets are told at once through
    /// ``revocationEvents(pollingEvery:)``.
    ///
    /// Returns the revoked device.
    public func logout(_ device: AuthenticatedDevice) async throws(PairingError) -> DeviceRecord {
        let revoked = try await revoke(deviceID: device.deviceID)
        logger.notice("device logged out", metadata: ["device": "\(revoked.id)"])
        return revoked
    }

    /// Who the holder of an access token is (`GET /api/me`): the device's record and the token's expiry, no secrets.
    public func account(of device: AuthenticatedDevice) async throws(PairingError) -> AccountInfo {
        guard let record = try await self.device(id: device.deviceID) else { throw .unknownDevice(device.deviceID) }
        if record.isRevoked { throw .deviceRevoked(deviceID: record.id) }
        return AccountInfo(device: record, accessTokenExpiresAt: device.accessTokenExpiresAt)
    }

    /// Devices waiting for approval, oldest first.
    public func pendingDevices() async throws(PairingError) -> [DeviceRecord] {
        try await listDevices(includeRevoked: false).filter(\.isPending)
    }

    /// Approves a device waiting for approval; `deviceID` may be any unique prefix of its ID.
    ///
    /// Approving an approved device does nothing. Returns the updated record.
    @discardableResult
    public func approve(deviceID: String) async throws(PairingError) -> DeviceRecord {
        let result: Result<DeviceRecord, PairingError> = try await transaction { db in
            let resolved = try Self.resolveDevice(db, idOrPrefix: deviceID)
            guard case .success(let device) = resolved else { return resolved }
            if device.isRevoked { return .failure(.deviceRevoked(deviceID: device.id)) }
            try db.execute(sql: "UPDATE device SET approved = 1 WHERE id = ?", arguments: [device.id])
            var approved = device
            approved.approved = true
            return .success(approved)
        }
        let device = try result.get()
        logger.notice("device approved", metadata: ["device": "\(device.id)"])
        return device
    }

    /// Revokes a device and every token it holds, permanently; `deviceID` may be any unique prefix of its ID.
    ///
    /// The server should close the device's open WebSockets (close code 4003). Returns the updated record.
    @discardableResult
    public func revoke(deviceID: String) async throws(PairingError) -> DeviceRecord {
        let now = clock.now()
        let result: Result<DeviceRecord, PairingError> = try await transaction { db in
            let resolved = try Self.resolveDevice(db, idOrPrefix: deviceID)
            guard case .success(var device) = resolved else { return resolved }
            try Self.revokeDevice(db, id: device.id, now: now)
            device.revokedAt = device.revokedAt ?? now
            return .success(device)
        }
        let device = try result.get()
        logger.notice("device revoked", metadata: ["device": "\(device.id)"])
        listeners.publish([.device(device.id)])
        return device
    }

    /// Revokes every device and all their tokens.
    ///
    /// Pairing tokens not yet exchanged stay valid (see ``revokePairingTokens()``). Returns the
    /// IDs of the devices that were revoked by this call.
    @discardableResult
    public func revokeAllDevices() async throws(PairingError) -> [String] {
        let now = clock.now()
        let ids: [String] = try await transaction { db in
            let ids = try String.fetchAll(db, sql: "SELECT id FROM device WHERE revoked_at IS NULL ORDER BY created_at, id")
            for id in ids {
                try Self.revokeDevice(db, id: id, now: now)
            }
            return ids
        }
        logger.notice("all devices revoked", metadata: ["count": "\(ids.count)"])
        listeners.publish(ids.map(TokenRevocation.device))
        return ids
    }

    /// Deletes tokens that expired more than `age` ago (default 7 days), and devices revoked more than `age` ago with
    /// every token they held (a phone that pairs and logs out daily would otherwise add a row a day for good; a revoked
    /// device stays listed for a week).
    ///
    /// Returns how many rows were deleted.
    @discardableResult
    public func purgeExpiredTokens(olderThan age: TimeInterval = 7 * 24 * 3600) async throws(PairingError) -> Int {
        let cutoff = clock.now().addingTimeInterval(-age).timeIntervalSince1970
        return try await transaction { db in
            try db.execute(sql: "DELETE FROM token WHERE expires_at < ?", arguments: [cutoff])
            let tokens = db.changesCount
            // The device's tokens go with it (ON DELETE CASCADE).
            try db.execute(sql: "DELETE FROM device WHERE revoked_at IS NOT NULL AND revoked_at < ?", arguments: [cutoff])
            return tokens + db.changesCount
        }
    }

    /// Whether the pairing token with this hash is unused, unrevoked, unexpired and not yet claimed by a device.
    func pairingTokenState(hash: Data) async throws(PairingError) -> Bool {
        let now = clock.now()
        return try await read { db in
            guard let row = try Self.fetchToken(db, hash: hash, kind: .pairing),
                  row.usedAt == nil, row.revokedAt == nil, row.expiresAt > now, row.deviceID == nil
            else { return false }
            return true
        }
    }

    // MARK: - Implementation

    private struct TokenRow {
        var hash: Data
        var deviceID: String?
        var familyID: String?
        var dpopThumbprint: String?
        var expiresAt: Date
        var usedAt: Date?
        var revokedAt: Date?
    }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE device (
                    id TEXT PRIMARY KEY NOT NULL,
                    name TEXT NOT NULL,
                    created_at REAL NOT NULL,
                    last_seen_at REAL,
                    last_address TEXT,
                    approved INTEGER NOT NULL,
                    revoked_at REAL
                );
                CREATE TABLE token (
                    hash BLOB PRIMARY KEY NOT NULL,
                    kind TEXT NOT NULL CHECK (kind IN ('pairing', 'access', 'refresh')),
                    device_id TEXT REFERENCES device(id) ON DELETE CASCADE,
                    family_id TEXT,
                    created_at REAL NOT NULL,
                    expires_at REAL NOT NULL,
                    used_at REAL,
                    revoked_at REAL
                );
                CREATE INDEX token_device ON token(device_id);
                CREATE INDEX token_family ON token(family_id);
                """)
        }
        migrator.registerMigration("v2: revocation polling") { db in
            try db.execute(sql: """
                CREATE INDEX device_revoked ON device(revoked_at);
                CREATE INDEX token_refresh_revoked ON token(revoked_at) WHERE kind = 'refresh';
                """)
        }
        // Issue 30: the DPoP key (RFC 7638 thumbprint) a token family is bound to, on each of its tokens; families
        // issued before stay unbound (NULL).
        migrator.registerMigration("v3: dpop binding") { db in
            try db.execute(sql: "ALTER TABLE token ADD COLUMN dpop_jkt TEXT")
        }
        return migrator
    }

    /// Runs `body` in one `BEGIN IMMEDIATE` transaction, mapping database errors to ``PairingError/storage(_:)`` (with
    /// SQLite's result code).
    private func transaction<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(PairingError) -> T {
        let path = databaseURL.path
        do {
            return try await pool.writeWithoutTransaction { db in
                var output: T?
                try db.inTransaction(.immediate) {
                    output = try body(db)
                    return .commit
                }
                guard let output else {
                    throw PairingError.storage(PairingStorageFailure(.write, path: path, cause: .other("the transaction produced no result")))
                }
                return output
            }
        } catch let error as PairingError {
            throw error
        } catch {
            logger.error("pairing database write failed", metadata: ["error": "\(Redaction.redactTokens(in: "\(error)"))"])
            throw .storage(PairingStorageFailure(.write, path: databaseURL.path, error: error))
        }
    }

    private func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(PairingError) -> T {
        do {
            return try await pool.read(body)
        } catch {
            throw .storage(PairingStorageFailure(.read, path: databaseURL.path, error: error))
        }
    }

    /// Validates the shape of a presented token and returns its hash, without touching the database.
    private static func checkedHash(_ token: String, kind: TokenKind) throws(PairingError) -> Data {
        let trimmed = token.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw .missingToken }
        guard TokenSecret.isWellFormed(trimmed, kind: kind) else { throw .invalidToken(kind) }
        return TokenSecret.hash(trimmed)
    }

    /// Looks a token up by its hash.
    ///
    /// The lookup key is a SHA-256 digest an attacker cannot steer, so the index lookup leaks nothing useful;
    /// the stored digest is then compared once more in constant time.
    private static func fetchToken(_ db: Database, hash: Data, kind: TokenKind) throws -> TokenRow? {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM token WHERE hash = ?", arguments: [hash]) else {
            return nil
        }
        let storedHash: Data = row["hash"]
        let storedKind: String = row["kind"]
        guard TokenSecret.constantTimeEquals(storedHash, hash), storedKind == kind.rawValue else { return nil }
        return TokenRow(
            hash: storedHash,
            deviceID: row["device_id"],
            familyID: row["family_id"],
            dpopThumbprint: row["dpop_jkt"],
            expiresAt: date(row["expires_at"]) ?? .distantPast,
            usedAt: date(row["used_at"]),
            revokedAt: date(row["revoked_at"]))
    }

    private static func fetchDevice(_ db: Database, id: String) throws -> DeviceRecord? {
        try Row.fetchOne(db, sql: "SELECT * FROM device WHERE id = ?", arguments: [id]).map(device(from:))
    }

    private static func device(from row: Row) -> DeviceRecord {
        DeviceRecord(
            id: row["id"],
            name: row["name"],
            createdAt: date(row["created_at"]) ?? .distantPast,
            lastSeenAt: date(row["last_seen_at"]),
            lastAddress: row["last_address"],
            approved: row["approved"],
            revokedAt: date(row["revoked_at"]),
            dpopBound: row.hasColumn("dpop_bound") ? row["dpop_bound"] : nil)
    }

    private static func date(_ seconds: Double?) -> Date? {
        seconds.map(Date.init(timeIntervalSince1970:))
    }

    private static func resolveDevice(_ db: Database, idOrPrefix: String) throws -> Result<DeviceRecord, PairingError> {
        let wanted = idOrPrefix.trimmingCharacters(in: .whitespaces).lowercased()
        let allowed = Set("0123456789abcdef-")
        guard !wanted.isEmpty, wanted.allSatisfy(allowed.contains) else { return .failure(.unknownDevice(idOrPrefix)) }
        if let exact = try fetchDevice(db, id: wanted) { return .success(exact) }
        let matches = try Row.fetchAll(
            db, sql: "SELECT * FROM device WHERE substr(id, 1, ?) = ? LIMIT 2", arguments: [wanted.count, wanted])
        switch matches.count {
        case 0: return .failure(.unknownDevice(idOrPrefix))
        case 1: return .success(device(from: matches[0]))
        default: return .failure(.ambiguousDevice(idOrPrefix))
        }
    }

    private static func revokeDevice(_ db: Database, id: String, now: Date) throws {
        let seconds = now.timeIntervalSince1970
        try db.execute(sql: "UPDATE device SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", arguments: [seconds, id])
        try db.execute(sql: "UPDATE token SET revoked_at = ? WHERE device_id = ? AND revoked_at IS NULL", arguments: [seconds, id])
    }

    private static func touch(_ db: Database, deviceID: String, now: Date, address: String?) throws {
        if let address {
            try db.execute(
                sql: "UPDATE device SET last_seen_at = ?, last_address = ? WHERE id = ?",
                arguments: [now.timeIntervalSince1970, address, deviceID])
        } else {
            try db.execute(
                sql: "UPDATE device SET last_seen_at = ? WHERE id = ?", arguments: [now.timeIntervalSince1970, deviceID])
        }
    }

    private static func insertToken(
        _ db: Database, hash: Data, kind: TokenKind, deviceID: String?, familyID: String?, now: Date, expires: Date,
        dpopThumbprint: String? = nil
    ) throws {
        try db.execute(
            sql: """
                INSERT INTO token (hash, kind, device_id, family_id, created_at, expires_at, used_at, revoked_at, dpop_jkt)
                VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, ?)
                """,
            arguments: [
                hash, kind.rawValue, deviceID, familyID, now.timeIntervalSince1970, expires.timeIntervalSince1970, dpopThumbprint,
            ])
    }

    private static func issueSession(
        _ db: Database, deviceID: String, familyID: String, now: Date, lifetimes: TokenLifetimes, dpopThumbprint: String?
    ) throws -> DeviceSession {
        func issue(_ kind: TokenKind) throws -> IssuedToken {
            let token = TokenSecret.generate(kind)
            let expires = now.addingTimeInterval(lifetimes.lifetime(of: kind))
            try insertToken(
                db, hash: TokenSecret.hash(token), kind: kind, deviceID: deviceID, familyID: familyID, now: now, expires: expires,
                dpopThumbprint: dpopThumbprint)
            return IssuedToken(token: token, kind: kind, expiresAt: expires)
        }
        return DeviceSession(
            deviceID: deviceID, accessToken: try issue(.access), refreshToken: try issue(.refresh), dpopThumbprint: dpopThumbprint)
    }

    /// Trims, removes control characters and any token-looking text, and caps the name at 64 characters.
    static func sanitizedName(_ name: String?) -> String {
        let cleaned = String((name ?? "").unicodeScalars.filter { !CharacterSet.controlCharacters.contains($0) })
        let redacted = Redaction.redactTokens(in: cleaned).trimmingCharacters(in: .whitespacesAndNewlines)
        let capped = String(redacted.prefix(64))
        return capped.isEmpty ? "Phone" : capped
    }
}
