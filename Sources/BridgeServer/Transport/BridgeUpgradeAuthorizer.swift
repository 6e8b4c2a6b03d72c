public import BridgeHTTP
public import BridgePairing
public import HTTPTypes
import Hummingbird

/// The seam where authentication plugs in: called with the HTTP upgrade request before a WebSocket is accepted.
///
/// Return ``BridgeUpgradeDecision/allow`` (or ``BridgeUpgradeDecision/authenticated(_:)``) to accept it.
public typealias BridgeUpgradeAuthorizer = @Sendable (_ request: BridgeUpgradeRequest) async -> BridgeUpgradeDecision

/// What an upgrade authorizer gets to see.
public struct BridgeUpgradeRequest: Sendable {
    /// The request path, with its query.
    public var path: String
    /// The HTTP header fields (for example `Authorization`).
    public var headers: HTTPFields
    /// The peer's IP address, if known ("192.168.1.20", "fe80::1%eth0").
    public var remoteAddress: String?
    /// The request's `Host` (its authority, "desk.local:9099"), if it sent one.
    public var host: String?
    /// The HTTP method (`GET` for an upgrade; `POST`, `GET` or `DELETE` at `/acp` over HTTP): a DPoP proof's `htm`.
    public var method: String
    /// Whether the connection is TLS: a DPoP proof's `htu` then names `https`, else `http`.
    public var isTLS: Bool

    /// Creates a request description.
    public init(
        path: String, headers: HTTPFields, remoteAddress: String?, host: String? = nil, method: String = "GET",
        isTLS: Bool = false
    ) {
        self.path = path
        self.headers = headers
        self.remoteAddress = remoteAddress
        self.host = host
        self.method = method
        self.isTLS = isTLS
    }
}

/// An upgrade authorizer's answer.
public enum BridgeUpgradeDecision: Sendable, Equatable {
    /// Accept the WebSocket.
    case allow
    /// Accept the WebSocket of this paired device: the connection is closed with 4001 when its access token
    /// expires, and with 4003 as soon as the device is revoked.
    case authenticated(AuthenticatedDevice)
    /// Refuse it with this answer: its status (401, 403, 429...), error code and message for the client, and header
    /// fields (`WWW-Authenticate`, `DPoP-Nonce`, `Retry-After`), written as they are.
    case deny(JSONErrorResponse)

    /// A refusal with `status`, an error `code` (`"missing_token"`) and a `message` for the client, and no extra
    /// header fields.
    public static func deny(status: HTTPResponse.Status, code: String, message: String) -> BridgeUpgradeDecision {
        .deny(JSONErrorResponse(status: status, code: code, message: message))
    }
}
