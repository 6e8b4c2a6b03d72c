import Foundation
import NIOCore

extension WebSocketConnector {
    /// Where to open a WebSocket: parsed from a `ws://` or `wss://` URL whose host may be a name, an IPv4
    /// address or a bracketed IPv6 address with a zone (`ws://[fe80::1%25eth0]:9099/`, RFC 6874).
    ///
    /// `http://` and `https://` are read the same way, for
    /// `WebSocketConnector.request(_:url:pin:headers:body:)`.
    public struct Target: Sendable, Hashable, CustomStringConvertible {
        /// Whether the URL is `wss://`.
        public var isSecure: Bool
        /// The host without brackets or percent-encoding: `desk.local`, `192.168.1.20`, `fe80::1%eth0`.
        public var host: String
        /// The TCP port.
        public var port: Int
        /// The request target: the path with its query, starting with `/`.
        public var path: String

        /// Parses `url`.
        public init(url: String) throws(WebSocketConnectorError) {
            var rest = Substring(url)
            let lower = rest.prefix(8).lowercased()
            if let scheme = ["ws://", "http://"].first(where: lower.hasPrefix) {
                isSecure = false
                rest = rest.dropFirst(scheme.count)
            } else if let scheme = ["wss://", "https://"].first(where: lower.hasPrefix) {
                isSecure = true
                rest = rest.dropFirst(scheme.count)
            } else {
                throw .invalidURL(url, reason: "the scheme must be ws:// or wss:// (http:// or https:// for a request)")
            }
            let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
            let authority = rest[..<authorityEnd]
            var target = String(rest[authorityEnd...])
            if let fragment = target.firstIndex(of: "#") { target = String(target[..<fragment]) }
            path = target.isEmpty ? "/" : (target.hasPrefix("/") ? target : "/" + target)
            guard !authority.contains("@") else { throw .invalidURL(url, reason: "user information in the URL is not supported") }
            let portText: Substring?
            if authority.hasPrefix("[") {
                guard let close = authority.firstIndex(of: "]") else {
                    throw .invalidURL(url, reason: "an IPv6 address opened with '[' needs a closing ']'")
                }
                host = try Target.ipv6Literal(authority[authority.index(after: authority.startIndex)..<close], in: url)
                let after = authority[authority.index(after: close)...]
                if after.isEmpty {
                    portText = nil
                } else if after.hasPrefix(":") {
                    portText = after.dropFirst()
                } else {
                    throw .invalidURL(url, reason: "unexpected '\(after)' after the IPv6 address")
                }
            } else {
                guard authority.filter({ $0 == ":" }).count <= 1 else {
                    throw .invalidURL(url, reason: "an IPv6 address must be written in brackets")
                }
                let colon = authority.firstIndex(of: ":")
                host = String(authority[..<(colon ?? authority.endIndex)])
                portText = colon.map { authority[authority.index(after: $0)...] }
            }
            guard !host.isEmpty else { throw .invalidURL(url, reason: "the host is missing") }
            if let portText, !portText.isEmpty {
                guard let value = Int(portText), (1...65_535).contains(value) else {
                    throw .invalidURL(url, reason: "'\(portText)' is not a port between 1 and 65535")
                }
                port = value
            } else {
                port = isSecure ? 443 : 80
            }
        }

        /// Whether ``host`` is an IPv6 address (with or without a zone).
        public var isIPv6: Bool { host.contains(":") }

        /// The host as a URL writes it: an IPv6 address in brackets with its zone's `%` as `%25` (RFC 6874).
        public var urlHost: String {
            guard isIPv6 else { return host }
            return "[" + host.replacingOccurrences(of: "%", with: "%25") + "]"
        }

        /// The `Host` header: ``urlHost`` and the port.
        public var authority: String { "\(urlHost):\(port)" }

        /// The `Origin` header: scheme and host as today's clients send it; an IPv6 zone is left out, it means
        /// something only on this machine (and a server's URL parser may refuse it).
        public var origin: String {
            let scheme = isSecure ? "wss" : "ws"
            guard isIPv6 else { return "\(scheme)://\(host)" }
            let address = host.split(separator: "%", maxSplits: 1).first.map(String.init) ?? host
            return "\(scheme)://[\(address)]"
        }

        /// The URL, normalized.
        public var url: String { "\(isSecure ? "wss" : "ws")://\(authority)\(path)" }

        /// Where errors say the connection went: `host:port`, an IPv6 address in brackets with its zone as is.
        public var displayAddress: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

        /// The URL as the user gave it.
        public var description: String { url }

        /// The socket address when ``host`` is an IP address (a zone becomes the scope id); `nil` for a name.
        func socketAddress() throws(WebSocketConnectorError) -> SocketAddress? {
            guard Target.isIPAddress(host) else { return nil }
            do {
                return try SocketAddress(ipAddress: host, port: port)
            } catch {
                throw .invalidURL(url, reason: isIPv6 && host.contains("%")
                    ? "the zone of '\(host)' is not an interface of this machine"
                    : "'\(host)' is not a valid IP address")
            }
        }

        static func isIPAddress(_ host: String) -> Bool {
            if host.contains(":") { return true }
            let parts = host.split(separator: ".", omittingEmptySubsequences: false)
            return parts.count == 4 && parts.allSatisfy { part in !part.isEmpty && part.count <= 3 && part.allSatisfy(\.isASCII) && UInt8(part) != nil }
        }

        /// The address inside brackets: hex digits, `:` and `.`, then an optional zone (`%25name`; a bare `%` is
        /// accepted too).
        ///
        /// The zone is percent-decoded.
        private static func ipv6Literal(_ text: Substring, in url: String) throws(WebSocketConnectorError) -> String {
            let parts = text.split(separator: "%", maxSplits: 1, omittingEmptySubsequences: false)
            let address = parts[0]
            guard !address.isEmpty, address.contains(":"),
                  address.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." })
            else { throw .invalidURL(url, reason: "'\(address)' is not an IPv6 address") }
            guard parts.count == 2 else { return String(address) }
            var zone = String(parts[1])
            if zone.hasPrefix("25") { zone.removeFirst(2) }
            guard let decoded = zone.removingPercentEncoding, !decoded.isEmpty,
                  decoded.allSatisfy({ !$0.isWhitespace && $0 != "%" && $0 != "/" })
            else { throw .invalidURL(url, reason: "the zone after '%25' must name an interface, e.g. %25eth0") }
            return "\(address)%\(decoded)"
        }
    }
}
