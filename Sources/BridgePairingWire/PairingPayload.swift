import Foundation

/// The pairing payload: where to reach the desktop and the pairing token.
///
/// The QR code holds it as the web app URL (``appURL``: `https://<lan-ip>:9099/app#<base64url of this JSON>`);
/// `/api/pair/info` and `oa-bridge pair --json` give the JSON itself, and ``init(scannedText:)`` reads either.
///
/// `{"ws":"ws://<lan-ip>:9099/","http":"http://<lan-ip>:9099","session":"<uuid>","name":"<service name>",
/// "token":"oa_p_…","fallbacks":["<tailscale name>",…]}`; `token` is absent when auth is off (`--auth none`).
/// With TLS the URLs are `wss://…` and `https://…` and `"pin":"sha256/…"` is the bridge's certificate pin: the QR code
/// is the trusted channel it travels through.
public struct PairingPayload: Sendable, Equatable, Codable {
    /// The WebSocket URL for JSON-RPC.
    public var ws: String
    /// The HTTP base URL (for `/api/auth/exchange` and friends).
    public var http: String
    /// The server's session UUID (changes at every start).
    public var session: String
    /// The service name shown to the user.
    public var name: String
    /// The pairing token, or `nil` when auth is off.
    public var token: String?
    /// Other host names or addresses to try (for example the Tailscale name), in order.
    public var fallbacks: [String]
    /// The pin of the bridge's TLS certificate (`sha256/<base64>`), or `nil` when the bridge serves plaintext only.
    public var pin: String?

    /// A payload with all fields given.
    public init(ws: String, http: String, session: String, name: String, token: String?, fallbacks: [String] = [], pin: String? = nil) {
        self.ws = ws
        self.http = http
        self.session = session
        self.name = name
        self.token = token
        self.fallbacks = fallbacks
        self.pin = pin
    }

    /// A payload for `host` (an IPv4 address, a name, or an IPv6 address with or without brackets) and `port`.
    /// - Parameters:
    ///   - host: where the phone reaches the bridge: an IPv4 address, a name, or an IPv6 address (brackets optional).
    ///   - port: the bridge's port.
    ///   - webSocketPath: the path of the JSON-RPC WebSocket endpoint, starting with `/`.
    ///   - session: the server's session UUID (changes at every start).
    ///   - name: the service name shown to the user.
    ///   - token: the pairing token, or `nil` when auth is off.
    ///   - fallbacks: other host names or addresses to try (for example the Tailscale name), in order.
    ///   - pin: the TLS certificate pin; when given the URLs are `wss://` and `https://`.
    public init(
        host: String, port: Int = 9099, webSocketPath: String = "/", session: String, name: String,
        token: String?, fallbacks: [String] = [], pin: String? = nil
    ) {
        let authority = "\(LANAddress.bracketedIfIPv6(host)):\(port)"
        let path = webSocketPath.hasPrefix("/") ? webSocketPath : "/" + webSocketPath
        let secure = pin != nil
        self.init(
            ws: "\(secure ? "wss" : "ws")://\(authority)\(path)", http: "\(secure ? "https" : "http")://\(authority)",
            session: session, name: name, token: token, fallbacks: fallbacks, pin: pin)
    }

    /// Compact JSON with sorted keys and unescaped slashes: the payload the QR code's URL carries in its fragment.
    public func jsonString() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding a struct of strings cannot fail; fall back to an empty object rather than trapping.
        guard let data = try? encoder.encode(self) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}
