public import BridgeDiscovery
import Foundation

/// One way to reach a bridge: a WebSocket URL and where it came from.
public struct BridgeEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// Where a candidate endpoint came from, in the order the connect chain prefers them.
    public enum Source: String, Sendable, Hashable, Codable, CaseIterable {
        /// Discovered on the LAN over mDNS/DNS-SD.
        case mdns
        /// Given by the user as `host[:port]`.
        case manual
        /// The desktop's Tailscale MagicDNS name or Tailscale IP.
        case tailscale
    }

    /// Where it came from.
    public var source: Source
    /// The URL host: a name, an IPv4 address, or a bracketed IPv6 address (`[fe80::1%25eth0]`).
    public var host: String
    /// The TCP port.
    public var port: Int
    /// The WebSocket path, starting with `/`.
    public var path: String
    /// Whether the endpoint speaks TLS (`wss://`, `https://`).
    public var secure: Bool

    /// The bridge's default port.
    public static let defaultPort = 9099

    /// Creates an endpoint.
    public init(source: Source, host: String, port: Int = BridgeEndpoint.defaultPort, path: String = "/", secure: Bool = false) {
        self.secure = secure
        self.source = source
        self.host = host
        self.port = port
        self.path = path.hasPrefix("/") ? path : "/" + path
    }

    /// The WebSocket URL.
    public var url: String { "\(secure ? "wss" : "ws")://\(host):\(port)\(path)" }

    /// The HTTP base URL of the same bridge (for `/api/...`).
    public var httpBase: String { "\(secure ? "https" : "http")://\(host):\(port)" }

    /// The same endpoint over TLS (the bridge serves TLS and plaintext on one port).
    public var overTLS: BridgeEndpoint {
        var copy = self
        copy.secure = true
        return copy
    }

    /// The URL and where it came from, for example `ws://192.0.2.7:9099/ (mdns)`.
    public var description: String { "\(url) (\(source.rawValue))" }

    /// Parses what a user types: `host`, `host:port`, `[v6]:port`, a bare IPv6 address, or a
    /// `ws://` / `wss://` URL (`http://` / `https://` too).
    ///
    /// The port defaults to 9099.
    public static func manual(_ text: String, source: Source = .manual) throws(BridgeClientError) -> BridgeEndpoint {
        var rest = text.trimmingCharacters(in: .whitespaces)
        var path = "/"
        var secure = false
        for scheme in ["ws://", "http://", "wss://", "https://"] where rest.lowercased().hasPrefix(scheme) {
            rest.removeFirst(scheme.count)
            secure = scheme.hasPrefix("wss") || scheme.hasPrefix("https")
        }
        if let slash = rest.firstIndex(of: "/") {
            path = String(rest[slash...])
            rest = String(rest[..<slash])
        }
        guard !rest.isEmpty else { throw .invalidAddress(text, reason: "it is empty") }
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw .invalidAddress(text, reason: "an IPv6 address opened with '[' needs a closing ']'") }
            let literal = String(rest[rest.index(after: rest.startIndex)..<close])
            let after = rest[rest.index(after: close)...]
            var port = defaultPort
            if after.hasPrefix(":") {
                port = try parsePort(String(after.dropFirst()), in: text)
            } else if !after.isEmpty {
                throw .invalidAddress(text, reason: "unexpected '\(after)' after the IPv6 address")
            }
            return BridgeEndpoint(source: source, host: bracket(literal), port: port, path: path, secure: secure)
        }
        let colons = rest.filter { $0 == ":" }.count
        if colons > 1 {
            // A bare IPv6 address without a port.
            return BridgeEndpoint(source: source, host: bracket(rest), port: defaultPort, path: path, secure: secure)
        }
        if colons == 1, let colon = rest.firstIndex(of: ":") {
            let host = String(rest[..<colon])
            guard !host.isEmpty else { throw .invalidAddress(text, reason: "the host is missing before ':'") }
            return BridgeEndpoint(source: source, host: host, port: try parsePort(String(rest[rest.index(after: colon)...]), in: text), path: path, secure: secure)
        }
        return BridgeEndpoint(source: source, host: rest, port: defaultPort, path: path, secure: secure)
    }

    /// Every way to reach a discovered service, best first (IPv4, global IPv6, link-local IPv6).
    public static func candidates(for service: ResolvedService) -> [BridgeEndpoint] {
        let path = service.txt["path"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/"
        let ordered = service.addresses.filter { $0.family == .ipv4 }
            + service.addresses.filter { $0.family == .ipv6 && !$0.isLinkLocal }
            + service.addresses.filter { $0.isLinkLocal }
        return ordered.map { BridgeEndpoint(source: .mdns, host: $0.urlHost, port: Int(service.port), path: path) }
    }

    /// Brackets an IPv6 literal for a URL, encoding a zone's `%` as `%25` (RFC 6874).
    static func bracket(_ literal: String) -> String {
        var address = literal
        if let percent = address.firstIndex(of: "%"), !address[percent...].hasPrefix("%25") {
            address.replaceSubrange(percent...percent, with: "%25")
        }
        return "[\(address)]"
    }

    private static func parsePort(_ text: String, in input: String) throws(BridgeClientError) -> Int {
        guard let port = Int(text), (1...65_535).contains(port) else {
            throw .invalidAddress(input, reason: "'\(text)' is not a port between 1 and 65535")
        }
        return port
    }
}
