import Hummingbird

/// Routes every request on its normalised path (RFC 3986 §6.2.2): percent-encoded unreserved characters decoded
/// (`/%61pi` → `/api`), then empty and `.` segments dropped and `..` segments resolved (`//api/./x/../status` →
/// `/api/status`).
///
/// The router, its groups and their middleware (authentication) then all see the one path that decides which route
/// answers, so no spelling of a protected path reaches its handler without the route's checks.
///
/// With ``allowed``, a `404` for a path the router knows under other methods becomes `405` with `Allow`.
struct PathNormalizingResponder<Inner: HTTPResponder>: HTTPResponder where Inner.Context: RequestContext {
    typealias Context = Inner.Context

    let inner: Inner
    /// The methods of each routed path, for `405` (``AllowedMethods``); `nil`: the inner responder's answers as they are.
    var allowed: AllowedMethods<Context>? = nil

    func respond(to request: Request, context: Context) async throws -> Response {
        var request = request
        if let target = request.head.path, let normalized = Self.normalize(target), normalized != target {
            var head = request.head
            head.path = normalized
            request = Request(head: head, body: request.body)
        }
        let response = try await inner.respond(to: request, context: context)
        guard response.status == .notFound, let allowed else { return response }
        return await allowed.refusal(for: request, context: context) ?? response
    }

    /// `target` (a path with an optional query) with its path normalised; the query is kept as it is.
    ///
    /// `nil` for a target that is not a path (`*`, an absolute URL), which is left to the router.
    static func normalize(_ target: String) -> String? {
        guard target.hasPrefix("/") else { return nil }
        let query = target.firstIndex(of: "?")
        let path = query.map { target[..<$0] } ?? target[...]
        var segments: [Substring] = []
        for segment in decodingUnreserved(path).split(separator: "/", omittingEmptySubsequences: true) {
            switch segment {
            case ".": continue
            case "..": _ = segments.popLast()
            default: segments.append(segment)
            }
        }
        let rest = query.map { String(target[$0...]) } ?? ""
        return "/" + segments.joined(separator: "/") + rest
    }

    /// Decodes `%XX` escapes of unreserved characters (letters, digits, `-`, `.`, `_`, `~`); other escapes stay.
    static func decodingUnreserved(_ path: Substring) -> String {
        guard path.contains("%") else { return String(path) }
        let bytes = Array(path.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
               let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) {
                let byte = high << 4 | low
                if isUnreserved(byte) {
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

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }
}
