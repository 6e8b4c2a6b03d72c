/// What a DPoP proof must match: the request it came with.
public struct DPoPRequest: Sendable, Equatable {
    /// The HTTP method (`GET` for a WebSocket upgrade).
    public var method: String
    /// The request's target URI as the bridge sees it: scheme from the connection (TLS or not), authority from `Host`,
    /// and the path; a query or fragment is ignored.
    public var uri: String
    /// The access token presented with the proof (`Authorization: DPoP …`), if any: the proof's `ath` must hash it.
    public var accessToken: String?

    /// A request to check a proof against.
    public init(method: String, uri: String, accessToken: String? = nil) {
        self.method = method
        self.uri = uri
        self.accessToken = accessToken
    }
}
