import Foundation
import Synchronization

/// A request's target URI as DPoP compares it (RFC 9449 §4.3 check 9): scheme, host, port and path, after RFC 3986's
/// syntax-based (§6.2.2) and scheme-based (§6.2.3) normalisation; query and fragment ignored.
///
/// A WebSocket's `ws`/`wss` is the same request as `http`/`https` (RFC 6455 §3 maps them), so a browser may name the
/// URL it opened and a native client the HTTP request it sent: both compare equal.
public struct DPoPTargetURI: Sendable, Hashable, CustomStringConvertible {
    /// The normalised form, `scheme://host[:port]/path`.
    public let normalized: String

    /// Normalises `uri`; nil when it is not an absolute `http`, `https`, `ws` or `wss` URI with a host.
    public init?(_ uri: String) {
        guard let components = URLComponents(string: uri), let rawScheme = components.scheme?.lowercased(),
              let rawHost = components.percentEncodedHost, !rawHost.isEmpty
        else { return nil }
        let scheme: String
        switch rawScheme {
        case "http", "ws": scheme = "http"
        case "https", "wss": scheme = "https"
        default: return nil
        }
        let host = Self.normalizePercentEncoding(rawHost).lowercased()
        var port = ""
        if let number = components.port, number != (scheme == "https" ? 443 : 80) { port = ":\(number)" }
        var path = Self.removeDotSegments(Self.normalizePercentEncoding(components.percentEncodedPath))
        if path.isEmpty { path = "/" }
        normalized = "\(scheme)://\(host)\(port)\(path)"
    }

    /// The normalised form.
    public var description: String { normalized }

    /// Request URIs normalised before: a bridge is addressed by a handful of names, so each is parsed once.
    ///
    /// Bounded (the `Host` is the client's to choose): at `capacity` it starts over.
    package final class Memo: Sendable {
        /// The most URIs kept.
        let capacity: Int
        private let table = Mutex<[String: DPoPTargetURI]>([:])

        package init(capacity: Int = 256) {
            self.capacity = max(1, capacity)
        }

        /// `DPoPTargetURI(uri)`, remembered when it is one.
        package func normalized(_ uri: String) -> DPoPTargetURI? {
            if let known = table.withLock({ $0[uri] }) { return known }
            guard let parsed = DPoPTargetURI(uri) else { return nil }
            table.withLock { table in
                if table.count >= capacity { table.removeAll(keepingCapacity: true) }
                table[uri] = parsed
            }
            return parsed
        }
    }

    /// Upper-case hex in every percent-encoding, and unreserved characters decoded (RFC 3986 §6.2.2.1, §6.2.2.2).
    static func normalizePercentEncoding(_ text: String) -> String {
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
               let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) {
                let value = high << 4 | low
                if isUnreserved(value) {
                    out.append(value)
                } else {
                    out.append(UInt8(ascii: "%"))
                    out.append(contentsOf: String(format: "%02X", value).utf8)
                }
                index += 3
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// RFC 3986 §5.2.4.
    static func removeDotSegments(_ path: String) -> String {
        var output: [Substring] = []
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        for (position, segment) in segments.enumerated() {
            let isLast = position == segments.count - 1
            switch segment {
            case ".": if isLast { output.append("") }
            case "..":
                if output.count > 1 { output.removeLast() }
                if isLast { output.append("") }
            default: output.append(segment)
            }
        }
        let joined = output.joined(separator: "/")
        return path.hasPrefix("/") && !joined.hasPrefix("/") ? "/" + joined : joined
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
             UInt8(ascii: "~"):
            return true
        default: return false
        }
    }
}
