/// What the WebSocket client library can connect to.
///
/// swift-websocket's URL parser reads the host up to the first `:`, so an IPv6 literal
/// (`ws://[fd00::2]:9099/`) cannot be used; such candidates fail at once with a clear error and
/// the race moves on (IPv4 and host names come first anyway).
enum WebSocketURLSupport {
    static func check(_ url: String) throws(BridgeClientError) {
        if let hostStart = url.range(of: "://")?.upperBound, url[hostStart...].hasPrefix("[") {
            throw .unsupportedAddress(url, reason: "IPv6 address literals are not supported by the WebSocket client library yet; use the IPv4 address or a host name")
        }
    }
}
