import BridgeDPoP
public import BridgePairingWire
public import BridgeTLS
public import BridgeTime
public import Foundation
import Logging

/// A paired client's credentials: exchanges a pairing token, keeps the access and refresh
/// tokens in a private file (mode 0600; the Keychain plays this part on iOS), and refreshes the
/// access token before it expires. Concurrent callers of ``credential()`` share one refresh.
///
/// Over `https://` the exchange and every refresh are held to the bridge's certificate pin: the one from the QR
/// code, or (trust on first use, when the QR code had none) the one the bridge presented at pairing. The pin is kept
/// with the tokens, so a later desktop with another key is refused.
///
/// Pairing makes this client's DPoP key (RFC 9449, ``DPoPClientKey``) in `dpop/` beside the credentials file and sends
/// a proof with the exchange: a bridge that binds the family (`token_type` `DPoP`) gets a proof with every refresh, and
/// ``credential()`` hands out the access token with that key (a ``BridgeCredential``), so that every connection made
/// with it sends a proof.
public actor TokenVault {
    /// What is kept on disk.
    public struct Credentials: Sendable, Codable, Equatable {
        /// The bridge's HTTP base URL, for example `http://192.168.1.20:9099`.
        public var bridge: String
        /// The tokens and device id from the last exchange or refresh.
        public var tokens: TokenResponse
        /// The bridge's certificate pin (`sha256/…`) for `https://` and `wss://`; `nil` for a plaintext-only bridge.
        public var pin: String?
        /// The DPoP key file the tokens are bound to, relative to the credentials file's directory
        /// (`dpop/pin-….key`); `nil` for unbound tokens.
        public var dpopKey: String?

        /// Credentials as kept on disk.
        public init(bridge: String, tokens: TokenResponse, pin: String?, dpopKey: String? = nil) {
            self.bridge = bridge
            self.tokens = tokens
            self.pin = pin
            self.dpopKey = dpopKey
        }

        /// Whether the bridge bound the tokens to this client's key (`token_type` `DPoP`).
        public var isBound: Bool { dpopKey != nil && tokens.tokenType.caseInsensitiveCompare("DPoP") == .orderedSame }
    }

    private let file: URL?
    private let connector: WebSocketConnector
    private var credentials: Credentials?
    private var refreshing: Task<Credentials, any Error>?
    /// The loaded DPoP key of bound credentials.
    private var binding: DPoPClientBinding?
    /// Refresh when the access token has less than this left.
    private let refreshMargin: TimeInterval
    private let now: @Sendable () -> Date

    /// Creates a vault backed by `file` (`nil` keeps tokens in memory only) and loads it if present; token expiry and
    /// its DPoP proofs are read on `clock`'s wall time (the system's unless a test moves one).
    public init(file: URL?, refreshMargin: TimeInterval = 60, clock: any BridgeClock = ContinuousClock()) {
        self.init(file: file, refreshMargin: refreshMargin, wallTime: { clock.wallTime })
    }

    private init(file: URL?, refreshMargin: TimeInterval, wallTime now: @escaping @Sendable () -> Date) {
        self.file = file
        self.refreshMargin = refreshMargin
        self.now = now
        self.connector = WebSocketConnector(timeout: .seconds(10), logger: Logger(label: "oa-bridge.token-vault"))
        if let file, let data = try? Data(contentsOf: file) {
            self.credentials = try? PairingJSON.decoder.decode(Credentials.self, from: data)
        }
    }

    /// The credentials held now, if any.
    public var current: Credentials? { credentials }

    /// The bridge's certificate pin kept with the tokens, if any.
    public var pin: CertificatePin? {
        get throws(CertificatePinError) {
            guard let text = credentials?.pin else { return nil }
            return try CertificatePin(parsing: text)
        }
    }

    /// Exchanges a pairing token (from the QR payload) at `bridge` for access and refresh tokens.
    /// - Parameters:
    ///   - bridge: the bridge's base URL, `http://` or `https://` with host and port, as in the QR payload.
    ///   - pairingToken: the one-time pairing token from the QR payload or the pairing code.
    ///   - deviceName: the name the bridge lists this device under (`oa-bridge devices`).
    ///   - pin: the QR payload's `pin`; over `https://` the bridge must present it. Without one the
    ///     certificate is trusted on first use and its pin kept.
    /// - Returns: the credentials, as stored.
    /// - Throws: ``BridgeClientError/unauthorized(_:)`` when the bridge refuses the pairing token or waits for the
    ///   desktop's approval; `CertificatePinError` for a malformed `pin`; ``WebSocketConnectorError`` when the bridge
    ///   does not answer; ``DPoPClientKeyError`` when the device key cannot be kept.
    @discardableResult
    public func pair(bridge: String, pairingToken: String, deviceName: String, pin: String? = nil) async throws -> Credentials {
        let expected = try pin.map { try CertificatePin(parsing: $0) }
        let body = try PairingJSON.encoder.encode(ExchangeRequest(pairingToken: pairingToken, deviceName: deviceName))
        // A new key for each pairing, where it can be kept (a vault in memory only keeps it in memory). It is written
        // under a name of its own until the exchange succeeds: a refused code never costs the key of the pairing
        // this client already has.
        let keyName = file.map { "dpop/" + DPoPClientKey.fileName(pinDigest: expected?.digest, fallback: $0.deletingPathExtension().lastPathComponent) }
        let pending = keyName.map { _ in keyFile("dpop/.pending-\(UUID().uuidString).key") }
        let signer = try pending.map { file throws(DPoPClientKeyError) in try DPoPClientKey.create(at: file) } ?? DPoPSigner()
        do {
            let newBinding = DPoPClientBinding(signer: signer, wallTime: now)
            let answer = try await newBinding.request(
                "POST", url: bridge + "/api/auth/exchange", using: connector, pin: expected,
                headers: ["Content-Type": "application/json"], body: Array(body))
            let data = Data(answer.body)
            switch answer.status {
            case 200:
                let tokens = try PairingJSON.decoder.decode(TokenResponse.self, from: data)
                let kept = expected ?? answer.certificatePin
                let bound = tokens.tokenType.caseInsensitiveCompare("DPoP") == .orderedSame
                if bound, let pending, let keyName {
                    try DPoPClientKey.move(pending, to: keyFile(keyName))
                } else if let pending {
                    try? FileManager.default.removeItem(at: pending)
                }
                binding = bound ? newBinding : nil
                return try store(Credentials(bridge: bridge, tokens: tokens, pin: kept?.description, dpopKey: bound ? (keyName ?? "") : nil))
            case 202:
                throw BridgeClientError.unauthorized("the desktop has to approve this device first ('oa-bridge devices approve' on the desktop), then pair again")
            default:
                throw BridgeClientError.unauthorized(TokenVault.message(data, status: answer.status))
            }
        } catch {
            if let pending { try? FileManager.default.removeItem(at: pending) }
            throw error
        }
    }

    /// What to present to the bridge: a valid access token (refreshed first if it is about to expire), with this
    /// client's key when the family is bound to it.
    /// - Throws: ``DPoPClientKeyError`` when the tokens are bound and the key is gone or unusable;
    ///   ``BridgeClientError/unauthorized(_:)`` when not paired or the bridge refused the refresh.
    public func credential() async throws -> BridgeCredential {
        guard var credentials else {
            throw BridgeClientError.unauthorized("this client is not paired")
        }
        if credentials.tokens.accessTokenExpiresAt.timeIntervalSince(now()) <= refreshMargin {
            credentials = try await refresh()
        }
        return BridgeCredential(accessToken: credentials.tokens.accessToken, proofKey: try loadedBinding())
    }

    /// The binding of bound credentials (its key read from disk the first time); `nil` for unbound ones.
    /// - Throws: ``DPoPClientKeyError``.
    public func loadedBinding() throws(DPoPClientKeyError) -> DPoPClientBinding? {
        guard let credentials, credentials.isBound, let name = credentials.dpopKey else { return nil }
        if let binding { return binding }
        let signer: DPoPSigner
        if name.isEmpty {
            // Bound in a vault without a file: the key lived in memory only.
            throw .missing(path: "(memory)")
        } else {
            signer = try DPoPClientKey.load(from: keyFile(name))
        }
        let loaded = DPoPClientBinding(signer: signer, wallTime: now)
        binding = loaded
        return loaded
    }

    /// Where the key file `name` (relative, as ``Credentials/dpopKey`` keeps it) is.
    private func keyFile(_ name: String) -> URL {
        let directory = file?.deletingLastPathComponent() ?? URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        return directory.appendingPathComponent(name)
    }

    /// Rotates the tokens now.
    ///
    /// Callers that arrive while a refresh runs wait for the same one.
    @discardableResult
    public func refresh() async throws -> Credentials {
        if let refreshing { return try await refreshing.value }
        guard let credentials else { throw BridgeClientError.unauthorized("this client is not paired") }
        let task = Task { () throws -> Credentials in
            let body = try PairingJSON.encoder.encode(RefreshRequest(refreshToken: credentials.tokens.refreshToken))
            let pin = try credentials.pin.map { try CertificatePin(parsing: $0) }
            // A bound family is refreshed with a proof of its key (no ath: no access token is presented).
            let binding = try self.loadedBinding()
            let url = credentials.bridge + "/api/auth/refresh"
            let answer: WebSocketConnector.Answer
            if let binding {
                answer = try await binding.request("POST", url: url, using: self.connector, pin: pin,
                                                   headers: ["Content-Type": "application/json"], body: Array(body))
            } else {
                answer = try await self.post(url, body: body, pin: pin)
            }
            let data = Data(answer.body)
            guard answer.status == 200 else { throw BridgeClientError.unauthorized(TokenVault.message(data, status: answer.status)) }
            let tokens = try PairingJSON.decoder.decode(TokenResponse.self, from: data)
            let bound = binding != nil && tokens.tokenType.caseInsensitiveCompare("DPoP") == .orderedSame
            return try self.store(Credentials(bridge: credentials.bridge, tokens: tokens, pin: credentials.pin,
                                              dpopKey: bound ? credentials.dpopKey : nil))
        }
        refreshing = task
        defer { refreshing = nil }
        return try await task.value
    }

    /// Forgets the credentials and deletes the file.
    public func forget() {
        if let credentials {
            if let name = credentials.dpopKey, !name.isEmpty { try? FileManager.default.removeItem(at: keyFile(name)) }
        }
        credentials = nil
        binding = nil
        if let file { try? FileManager.default.removeItem(at: file) }
    }

    private func store(_ new: Credentials) throws -> Credentials {
        credentials = new
        guard let file else { return new }
        let data = try PairingJSON.encoder.encode(new)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        // Create with 0600 before writing any secret into it.
        let path = file.path
        if !FileManager.default.fileExists(atPath: path) {
            FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600])
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        let handle = try FileHandle(forWritingTo: file)
        defer { try? handle.close() }
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: data)
        return new
    }

    /// POSTs JSON through the same connector as the WebSocket: IPv6 literals with zones, and over `https://` the
    /// pin check (a mismatch throws ``WebSocketConnectorError/pinMismatch(expected:seen:)``).
    private func post(_ url: String, body: Data, pin: CertificatePin?) async throws -> WebSocketConnector.Answer {
        try await connector.request(
            "POST", url: url, pin: pin, headers: ["Content-Type": "application/json"], body: Array(body))
    }

    static func message(_ data: Data, status: Int) -> String {
        if let body = try? PairingJSON.decoder.decode(AuthErrorBody.self, from: data) {
            return "\(body.message) (HTTP \(status))"
        }
        return "HTTP \(status)"
    }
}
