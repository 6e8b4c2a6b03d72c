import BridgePairingWire
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Address and origin rules for the HTTP side: loopback-only pages, rate-limit keys, browser Origin checks.
public enum NetworkPolicy {
    /// The host part of a peer address such as `192.168.1.20:51234`, `[fd00::1]:443`, `::1` or `192.168.1.20`,
    /// with IPv4-mapped IPv6 (`::ffff:10.0.0.1`) reduced to IPv4.
    ///
    /// Used as the rate-limiter key.
    public static func host(fromRemoteAddress address: String) -> String {
        var host = address.trimmingCharacters(in: .whitespaces)
        if host.hasPrefix("["), let close = host.firstIndex(of: "]") {
            host = String(host[host.index(after: host.startIndex)..<close])
        } else if host.filter({ $0 == ":" }).count == 1, let colon = host.firstIndex(of: ":") {
            host = String(host[..<colon])  // IPv4 with port
        }
        if let zone = host.firstIndex(of: "%") { host = String(host[..<zone]) }
        let lower = host.lowercased()
        if lower.hasPrefix("::ffff:"), lower.dropFirst(7).contains(".") { return String(lower.dropFirst(7)) }
        return lower
    }

    /// Whether a peer address (any form ``host(fromRemoteAddress:)`` accepts) is loopback: 127.0.0.0/8 or ::1.
    ///
    /// `/pair` and `/api/pair/*` answer only such peers.
    public static func isLoopback(_ remoteAddress: String?) -> Bool {
        guard let remoteAddress else { return false }
        let host = host(fromRemoteAddress: remoteAddress)
        if host == "::1" || host == "0:0:0:0:0:0:0:1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    /// The value of the first `token` query parameter in a request target such as `/?token=oa_s_…&x=1`, percent-decoded.
    public static func queryToken(fromPath path: String) -> String? {
        queryParameter("token", fromPath: path)
    }

    /// The value of the first `name` query parameter in a request target such as `/?token=…&dpop=…`, percent-decoded.
    public static func queryParameter(_ name: String, fromPath path: String) -> String? {
        guard let question = path.firstIndex(of: "?") else { return nil }
        var query = path[path.index(after: question)...]
        if let hash = query.firstIndex(of: "#") { query = query[..<hash] }
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == name else { continue }
            let value = String(parts[1]).replacingOccurrences(of: "+", with: " ")
            return value.removingPercentEncoding ?? value
        }
        return nil
    }

    /// The browser Origin check for WebSocket upgrades, so a web page cannot drive the bridge.
    ///
    /// Passes: no `Origin` (most native clients); a `ws://` or `wss://` origin (some native WebSocket clients, for example
    /// HummingbirdWSClient, send one; browsers never do); an `http(s)` origin whose `host:port` is the request's own
    /// `Host` (a page served by this bridge); anything in `allowedOrigins` (exact `scheme://host[:port]` strings).
    /// Refused: every other origin, `Origin: null` (sandboxed frames, `file:` pages) and several `Origin` values.
    public static func isOriginAllowed(origin: String?, host: String?, allowedOrigins: Set<String> = []) -> Bool {
        guard let origin = origin?.trimmingCharacters(in: .whitespaces), !origin.isEmpty else { return true }
        if allowedOrigins.contains(origin) { return true }
        guard let url = URL(string: origin), let scheme = url.scheme?.lowercased(), let originHost = url.host?.lowercased()
        else { return false }
        if (scheme == "ws" || scheme == "wss") && !origin.contains(",") && !origin.contains(" ") { return true }
        guard scheme == "http" || scheme == "https",
              let host = host?.trimmingCharacters(in: .whitespaces).lowercased(), !host.isEmpty
        else { return false }
        let defaultPort = scheme == "https" ? 443 : 80
        let originAuthority = "\(LANAddress.bracketedIfIPv6(originHost)):\(url.port ?? defaultPort)"
        let requestAuthority = host.contains("]:") || (!host.hasPrefix("[") && host.filter { $0 == ":" }.count == 1)
            ? host
            : "\(host):\(defaultPort)"
        return originAuthority == requestAuthority
    }
}

extension NetworkPolicy {
    /// Whether a `Host` header names this machine's loopback (`localhost`, `127.x.y.z`, `[::1]`, with any port).
    ///
    /// Checking it defeats DNS rebinding: a foreign site whose name resolves to 127.0.0.1 still sends its own name.
    public static func isLoopbackHostHeader(_ host: String?) -> Bool {
        guard var value = host?.trimmingCharacters(in: .whitespaces).lowercased(), !value.isEmpty else { return false }
        if value.hasPrefix("["), let close = value.firstIndex(of: "]") {
            value = String(value[value.index(after: value.startIndex)..<close])
        } else if let colon = value.firstIndex(of: ":"), value.filter({ $0 == ":" }).count == 1 {
            value = String(value[..<colon])
        }
        return value == "localhost" || value == "localhost." || isLoopback(value)
    }

    /// The gate for `/pair` and `/api/pair/*`: only a browser or tool on this machine, never a web page of another site.
    ///
    /// Refuses (with a message) unless the peer is loopback, the `Host` header is a loopback name, any `Origin` is
    /// this same host, and a state-changing request (`POST`) declares `Content-Type: application/json` (which a
    /// cross-site form cannot send without a CORS preflight this server never grants). `nil` means allowed.
    public static func localPageRefusal(
        remoteAddress: String?, host: String?, origin: String?, method: String, contentType: String?
    ) -> String? {
        guard isLoopback(remoteAddress) else {
            return "The pairing page and /api/pair/* answer only on this machine. Open http://127.0.0.1:<port>/pair on the desktop itself."
        }
        guard isLoopbackHostHeader(host) else {
            return "Open the pairing page as http://127.0.0.1:<port>/pair or http://localhost:<port>/pair (other host names are refused)."
        }
        guard isOriginAllowed(origin: origin, host: host) else {
            return "Requests from web pages of other sites are refused."
        }
        if method.uppercased() != "GET" && method.uppercased() != "HEAD" {
            let type = contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
            guard type == "application/json" else {
                return "Send this request with 'Content-Type: application/json'."
            }
        }
        return nil
    }
}

extension NetworkPolicy {
    /// Whether an HTTP method changes nothing (`GET`, `HEAD`, `OPTIONS`): the requests a cross-site page may make
    /// without the bridge checking its `Origin` (it cannot read the answers).
    public static func isSafeMethod(_ method: String) -> Bool {
        switch method.uppercased() {
        case "GET", "HEAD", "OPTIONS": true
        default: false
        }
    }

    /// The host part of a `Host` header (`desk.local:9099` → `desk.local`, `[::1]:9099` → `::1`), lower case, without
    /// a trailing dot; `nil` for an empty or missing header.
    public static func hostName(fromHostHeader host: String?) -> String? {
        guard var value = host?.trimmingCharacters(in: .whitespaces).lowercased(), !value.isEmpty else { return nil }
        if value.hasPrefix("["), let close = value.firstIndex(of: "]") {
            value = String(value[value.index(after: value.startIndex)..<close])
            if let zone = value.firstIndex(of: "%") { value = String(value[..<zone]) }
            return value.isEmpty ? nil : value
        }
        if let colon = value.lastIndex(of: ":") { value = String(value[..<colon]) }
        while value.hasSuffix(".") { value.removeLast() }
        return value.isEmpty ? nil : value
    }

    /// Whether `name` (a host name from ``hostName(fromHostHeader:)``) is an IP address literal: four decimal
    /// numbers of at most 255 separated by dots, or an IPv6 address (hex digits, colons, an IPv4 tail).
    public static func isAddressLiteral(_ name: String) -> Bool {
        if name.contains(":") {
            return name.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." }
        }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { !$0.isEmpty && $0.count <= 3 && $0.allSatisfy(\.isASCII) && UInt8($0) != nil }
    }

    /// Whether a `Host` header names this bridge: an IP address (no DNS, so no rebinding), `localhost`, or one of
    /// `names` (host names the bridge goes by, compared without port, case and trailing dot).
    public static func isBridgeHost(_ host: String?, names: Set<String>) -> Bool {
        guard let name = hostName(fromHostHeader: host) else { return false }
        if name == "localhost" || isAddressLiteral(name) { return true }
        return names.contains(name)
    }

    /// The browser check of every WebSocket upgrade and every state-changing request (a method other than `GET`,
    /// `HEAD`, `OPTIONS`), in every mode (tokens or `--auth none`), so that no web page of another site, nor one
    /// reached through DNS rebinding, drives the bridge.
    ///
    /// `nil` when it passes.
    ///
    /// - A request without `Origin` passes: browsers send one with every WebSocket upgrade and every `POST`, native
    ///   clients do not.
    /// - The `Origin` must be the bridge's own page: `http(s)://` with the request's `Host` as its authority (see
    ///   ``isOriginAllowed(origin:host:allowedOrigins:)``); `null`, another site and several values are refused.
    /// - With `checkHostName` (plaintext connections), the `Host` must be one of the bridge's own (see
    ///   ``isBridgeHost(_:names:)``): a page at `http://evil.example:9099` whose name was rebound to 127.0.0.1 sends
    ///   its own name. Over TLS the browser's certificate check already refuses a foreign name.
    public static func browserRefusal(
        origin: String?, host: String?, names: Set<String>, checkHostName: Bool
    ) -> BrowserRefusal? {
        guard let origin = origin?.trimmingCharacters(in: .whitespaces), !origin.isEmpty else { return nil }
        guard isOriginAllowed(origin: origin, host: host) else { return .foreignOrigin }
        // A `ws://`/`wss://` origin is a native client's (browsers send the page's http(s) origin): no page, no
        // rebinding, and it may reach the bridge by any name (a Tailscale name the bridge does not know yet).
        let scheme = origin.prefix(while: { $0 != ":" }).lowercased()
        guard scheme == "http" || scheme == "https" else { return nil }
        if checkHostName, !isBridgeHost(host, names: names) { return .foreignHost }
        return nil
    }

    /// Why ``browserRefusal(origin:host:names:checkHostName:)`` refused a request.
    public enum BrowserRefusal: Sendable, Equatable {
        /// A page of another site (or `Origin: null`, or several origins).
        case foreignOrigin
        /// A page of a host name that is not the bridge's (DNS rebinding).
        case foreignHost

        /// The machine-readable code (`forbidden_origin`, `forbidden_host`), for a 403 body.
        public var code: String {
            switch self {
            case .foreignOrigin: "forbidden_origin"
            case .foreignHost: "forbidden_host"
            }
        }

        /// What the client is told.
        public var message: String {
            switch self {
            case .foreignOrigin:
                "Requests and WebSocket connections from web pages of other sites are refused. Use the bridge's own "
                    + "web app (/app) or a native client."
            case .foreignHost:
                "Web pages may reach this bridge only by its own names (its host name, <host>.local, localhost, its "
                    + "addresses, its Tailscale name) or over https://: this Host is none of them."
            }
        }
    }
}

extension NetworkPolicy {
    /// The bucket a peer counts in for rate limits: an IPv4 address on its own (an IPv4-mapped IPv6 address as its
    /// IPv4 address), an IPv6 address by its /64 network (`2001:db8:1:2::/64`: a host is usually given a whole /64,
    /// so counting per address would give it 2^64 buckets).
    ///
    /// Anything that is not an address is its own bucket.
    public static func rateLimitKey(fromRemoteAddress address: String) -> String {
        let host = host(fromRemoteAddress: address)
        guard host.contains(":") else { return host }
        var bytes = in6_addr()
        guard inet_pton(AF_INET6, host, &bytes) == 1 else { return host }
        let prefix = withUnsafeBytes(of: &bytes) { Array($0.prefix(8)) }
        let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(prefix[$0]) << 8 | UInt16(prefix[$0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "::/64"
    }
}
