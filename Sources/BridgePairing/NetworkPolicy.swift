import BridgePairingWire
import Foundation

/// Address and origin rules for the HTTP side: loopback-only pages, rate-limit keys, browser Origin checks.
public enum NetworkPolicy {
    /// The host part of a peer address such as `192.168.1.20:51234`, `[fd00::1]:443`, `::1` or `192.168.1.20`,
    /// with IPv4-mapped IPv6 (`::ffff:10.0.0.1`) reduced to IPv4. Used as the rate-limiter key.
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
        guard let question = path.firstIndex(of: "?") else { return nil }
        var query = path[path.index(after: question)...]
        if let hash = query.firstIndex(of: "#") { query = query[..<hash] }
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == "token" else { continue }
            let value = String(parts[1]).replacingOccurrences(of: "+", with: " ")
            return value.removingPercentEncoding ?? value
        }
        return nil
    }

    /// The browser Origin check for WebSocket upgrades, so a web page cannot drive the bridge.
    ///
    /// Passes: no `Origin` (most native clients); a `ws://` or `wss://` origin (some native WebSocket clients, e.g.
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
