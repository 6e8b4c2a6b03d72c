import BridgePairingWire
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A paired client's credentials: exchanges a pairing token, keeps the access and refresh
/// tokens in a private file (mode 0600; the Keychain plays this part on iOS), and refreshes the
/// access token before it expires. Concurrent callers of ``accessToken()`` share one refresh.
public actor TokenVault {
    /// What is kept on disk.
    public struct Credentials: Sendable, Codable, Equatable {
        /// The bridge's HTTP base URL, e.g. `http://192.168.1.20:9099`.
        public var bridge: String
        /// The tokens and device id from the last exchange or refresh.
        public var tokens: TokenResponse
    }

    private let file: URL?
    private let session: URLSession
    private var credentials: Credentials?
    private var refreshing: Task<Credentials, any Error>?
    /// Refresh when the access token has less than this left.
    private let refreshMargin: TimeInterval
    private let now: @Sendable () -> Date

    /// Creates a vault backed by `file` (`nil` keeps tokens in memory only) and loads it if present.
    public init(file: URL?, refreshMargin: TimeInterval = 60, now: @escaping @Sendable () -> Date = { Date() }) {
        self.file = file
        self.refreshMargin = refreshMargin
        self.now = now
        self.session = URLSession(configuration: .ephemeral)
        if let file, let data = try? Data(contentsOf: file) {
            self.credentials = try? PairingJSON.decoder.decode(Credentials.self, from: data)
        }
    }

    /// The credentials held now, if any.
    public var current: Credentials? { credentials }

    /// Exchanges a pairing token (from the QR payload) at `bridge` for access and refresh tokens.
    @discardableResult
    public func pair(bridge: String, pairingToken: String, deviceName: String) async throws -> Credentials {
        let body = try PairingJSON.encoder.encode(ExchangeRequest(pairingToken: pairingToken, deviceName: deviceName))
        let (data, status) = try await post(bridge + "/api/auth/exchange", body: body)
        switch status {
        case 200:
            let tokens = try PairingJSON.decoder.decode(TokenResponse.self, from: data)
            return try store(Credentials(bridge: bridge, tokens: tokens))
        case 202:
            throw BridgeClientError.unauthorized("the desktop has to approve this device first ('oa-bridge devices approve' on the desktop), then pair again")
        default:
            throw BridgeClientError.unauthorized(TokenVault.message(data, status: status))
        }
    }

    /// A valid access token, refreshed first if it is about to expire.
    public func accessToken() async throws -> String {
        guard let credentials else {
            throw BridgeClientError.unauthorized("this client is not paired")
        }
        if credentials.tokens.accessTokenExpiresAt.timeIntervalSince(now()) > refreshMargin {
            return credentials.tokens.accessToken
        }
        return try await refresh().tokens.accessToken
    }

    /// Rotates the tokens now. Callers that arrive while a refresh runs wait for the same one.
    @discardableResult
    public func refresh() async throws -> Credentials {
        if let refreshing { return try await refreshing.value }
        guard let credentials else { throw BridgeClientError.unauthorized("this client is not paired") }
        let task = Task { () throws -> Credentials in
            let body = try PairingJSON.encoder.encode(RefreshRequest(refreshToken: credentials.tokens.refreshToken))
            let (data, status) = try await self.post(credentials.bridge + "/api/auth/refresh", body: body)
            guard status == 200 else { throw BridgeClientError.unauthorized(TokenVault.message(data, status: status)) }
            let tokens = try PairingJSON.decoder.decode(TokenResponse.self, from: data)
            return try self.store(Credentials(bridge: credentials.bridge, tokens: tokens))
        }
        refreshing = task
        defer { refreshing = nil }
        return try await task.value
    }

    /// Forgets the credentials and deletes the file.
    public func forget() {
        credentials = nil
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

    private func post(_ url: String, body: Data) async throws -> (Data, Int) {
        guard let target = URL(string: url) else { throw BridgeClientError.invalidAddress(url, reason: "not a URL") }
        var request = URLRequest(url: target)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = body
        request.timeoutInterval = 10
        let (data, response) = try await session.data(for: request)
        return (data, (response as? HTTPURLResponse)?.statusCode ?? 0)
    }

    static func message(_ data: Data, status: Int) -> String {
        if let body = try? PairingJSON.decoder.decode(AuthErrorBody.self, from: data) {
            return "\(body.message) (HTTP \(status))"
        }
        return "HTTP \(status)"
    }
}
