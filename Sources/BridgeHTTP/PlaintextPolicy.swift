import BridgePairing
import Foundation
import HTTPTypes
package import Hummingbird
package import Logging

/// What may cross the network in clear: from a non-loopback peer, nothing that carries a secret or drives the agent.
///
/// Refused in plaintext from other machines (403 `tls_required`, decided before any token is looked at, so a pairing
/// token sent in clear is not consumed): the pairing exchange and refresh (`/api/auth/*`), and any `/api/*` request or
/// WebSocket upgrade with an `Authorization` header or a `token` query parameter (an upgrade without one cannot drive
/// the agent: it gets the usual 401 from the token check). Loopback plaintext keeps
/// working (the `/pair` page, `oa-bridge pair`, local tools), and so does everything when tokens are off
/// (`--auth none --allow-network CIDR`: those networks are trusted and no secret travels) or `allowPlaintext` is set.
public struct PlaintextPolicy: Sendable, Equatable {
    /// `--allow-plaintext`: accept all of the above in clear too (for clients that cannot do TLS yet).
    public var allowPlaintext: Bool
    /// Whether the bridge uses tokens (an authenticator is configured).
    ///
    /// Without tokens nothing secret travels.
    public var tokensInUse: Bool

    /// A policy; the default refuses secrets in clear.
    public init(allowPlaintext: Bool = false, tokensInUse: Bool = true) {
        self.allowPlaintext = allowPlaintext
        self.tokensInUse = tokensInUse
    }

    /// One request as the policy sees it.
    public struct Request: Sendable {
        /// The request target (`/api/auth/exchange`), as sent or already normalised, in any form: origin form,
        /// absolute form (`http://x:abc//api/auth/exchange`), with or without its query.
        ///
        /// The policy judges its normalised path (``PlaintextPolicy/normalizedPath(ofTarget:)``).
        public var path: String
        /// The request target's query, if any (`token=…`).
        public var query: String?
        /// Whether an `Authorization` header is present (its value is never read here).
        public var hasAuthorization: Bool
        /// Whether this is a WebSocket upgrade.
        public var isUpgrade: Bool
        /// The peer's IP address in text.
        public var remoteAddress: String?
        /// Whether the connection is TLS.
        public var isTLS: Bool

        /// Describes a request.
        public init(path: String, query: String? = nil, hasAuthorization: Bool, isUpgrade: Bool, remoteAddress: String?, isTLS: Bool) {
            self.path = path
            self.query = query
            self.hasAuthorization = hasAuthorization
            self.isUpgrade = isUpgrade
            self.remoteAddress = remoteAddress
            self.isTLS = isTLS
        }
    }

    /// The machine-readable code of the refusal.
    public static let refusalCode = "tls_required"

    /// Whether `request` must be refused for coming in clear.
    public func refuses(_ request: Request) -> Bool {
        if request.isTLS || allowPlaintext || !tokensInUse { return false }
        if NetworkPolicy.isLoopback(request.remoteAddress) { return false }
        let carriesToken = request.hasAuthorization || Self.hasTokenParameter(request.query ?? Self.query(ofTarget: request.path))
        if request.isUpgrade { return carriesToken }
        // Lower case: refusing a spelling the router would not route costs nothing.
        let path = Self.normalizedPath(ofTarget: request.path).lowercased()
        guard path == "/api" || path.hasPrefix("/api/") else { return false }
        return path.hasPrefix("/api/auth/") || carriesToken
    }

    /// The path a request target names, normalised as the router sees it: the scheme and authority of an absolute
    /// form dropped (whatever its port says), the query and fragment dropped, escaped unreserved characters decoded,
    /// empty and `.` segments dropped and `..` resolved (`http://x:abc//api/./auth/exchange` → `/api/auth/exchange`).
    ///
    /// A target that is not a path (`*`, an authority) is returned as it is.
    public static func normalizedPath(ofTarget target: String) -> String {
        var rest = Substring(target)
        if let separator = rest.range(of: "://"), !rest[..<separator.lowerBound].isEmpty,
           rest[..<separator.lowerBound].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }) {
            let authorityAndPath = rest[separator.upperBound...]
            rest = authorityAndPath.firstIndex { "/?#".contains($0) }.map { authorityAndPath[$0...] } ?? ""
        }
        if let end = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { rest = rest[..<end] }
        guard rest.isEmpty || rest.hasPrefix("/") else { return String(rest) }
        var segments: [Substring] = []
        for segment in decodingUnreserved(rest).split(separator: "/", omittingEmptySubsequences: true) {
            switch segment {
            case ".": continue
            case "..": _ = segments.popLast()
            default: segments.append(segment)
            }
        }
        return "/" + segments.joined(separator: "/")
    }

    /// The query of a request target (after `?`, before `#`), if it has one.
    static func query(ofTarget target: String) -> String? {
        guard let question = target.firstIndex(of: "?") else { return nil }
        let query = target[target.index(after: question)...]
        return String(query.prefix { $0 != "#" })
    }

    /// `%XX` escapes of unreserved characters (letters, digits, `-`, `.`, `_`, `~`) decoded; other escapes kept.
    private static func decodingUnreserved(_ path: Substring) -> String {
        guard path.contains("%") else { return String(path) }
        let bytes = Array(path.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
               let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) {
                let byte = high << 4 | low
                let unreserved = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
                if unreserved {
                    output.append(byte)
                    index += 3
                    continue
                }
            }
            output.append(bytes[index])
            index += 1
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// The 403 a refused request gets.
    package func refusal() -> JSONErrorResponse {
        JSONErrorResponse(
            status: .forbidden, code: Self.refusalCode,
            message: "this bridge accepts tokens and prompts from other machines only over TLS: connect with wss:// or "
                + "https:// and check the pin that `oa-bridge pair` shows (the QR code carries both); the desktop's "
                + "owner can allow plaintext from other machines for a client that cannot do TLS")
    }

    private static func hasTokenParameter(_ query: String?) -> Bool {
        guard let query else { return false }
        return query.split(separator: "&").contains { $0 == "token" || $0.hasPrefix("token=") }
    }
}

extension PlaintextPolicy {
    /// The refusal for a WebSocket upgrade in `context` when it came in clear from another machine, logged; `nil`
    /// when it may proceed.
    package func upgradeRefusal(
        _ request: Hummingbird.Request, context: some TransportAwareRequestContext, logger: Logger
    ) -> JSONErrorResponse? {
        let remote = context.remoteAddress?.ipAddress
        let view = Request(
            path: request.head.path ?? request.uri.path, query: request.uri.query,
            hasAuthorization: request.headers[.authorization] != nil, isUpgrade: true, remoteAddress: remote, isTLS: context.isTLS)
        guard refuses(view) else { return nil }
        logger.notice("WebSocket upgrade refused: plaintext from another machine (TLS required)", metadata: ["remote": "\(remote ?? "?")"])
        return refusal()
    }
}
