public import Foundation
public import HTTPTypes
public import Hummingbird

/// An HTTP refusal as a typed value: its status, a machine-readable code, a message, extra members of the JSON body
/// and header fields (`WWW-Authenticate`, `DPoP-Nonce`, `Retry-After`…).
///
/// Thrown from the upgrade check, returned by middleware and routes, carried by an upgrade authorizer's denial, and
/// written in one shape by `head(closing:)` and ``body`` whichever layer writes it (Hummingbird, the HTTP/1.1 or
/// HTTP/2 codec, or raw bytes before any codec).
public struct JSONErrorResponse: HTTPResponseError, Equatable {
    /// The HTTP status.
    public let status: HTTPResponse.Status
    /// Machine-readable code, for example `forbidden_network`.
    public let code: String
    /// What happened and what to do.
    public let message: String
    /// Extra members of the body (for example `retry_after`).
    public var extra: [String: Int] = [:]
    /// Extra header fields (for example `Retry-After`).
    public var headers: HTTPFields = [:]

    /// A refusal with `status`, `code` and `message`, and `extra` members and `headers` when given.
    public init(
        status: HTTPResponse.Status, code: String, message: String, extra: [String: Int] = [:], headers: HTTPFields = [:]
    ) {
        self.status = status
        self.code = code
        self.message = message
        self.extra = extra
        self.headers = headers
    }

    /// The body's JSON text: `{"error": code, "message": …}` and the ``extra`` members.
    public var bodyText: String {
        var members: [String: Any] = ["error": code, "message": message]
        for (key, value) in extra { members[key] = value }
        let data = (try? JSONSerialization.data(withJSONObject: members, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// The body's bytes.
    public var body: ByteBuffer { ByteBuffer(string: bodyText) }

    /// The response head every writer sends: the status, ``headers``, `Content-Type: application/json`,
    /// `Cache-Control: no-store` and `Content-Length`; with `closing`, `Connection: close` (HTTP/1.1 only); with `date`,
    /// the `Date` an origin server sends (RFC 9110 §6.6.1), which a DPoP client corrects its proofs' `iat` by.
    public func head(closing: Bool = false, date: Date? = nil) -> HTTPResponse {
        var fields = headers
        fields[.contentType] = "application/json"
        fields[.cacheControl] = "no-store"
        fields[.contentLength] = "\(bodyText.utf8.count)"
        if closing { fields[.connection] = "close" }
        if let date { fields[.date] = HTTPDate.string(from: date) }
        return HTTPResponse(status: status, headerFields: fields)
    }

    /// The HTTP/1.1 text of the whole answer with `Connection: close`, for a writer that has no HTTP codec.
    public var closingHTTP1Text: String { closingHTTP1Text(date: nil) }

    /// The HTTP/1.1 text of the whole answer with `Connection: close` and, when given, `Date: date`.
    public func closingHTTP1Text(date: Date?) -> String {
        let head = head(closing: true, date: date)
        var text = "HTTP/1.1 \(head.status.code) \(head.status.reasonPhrase)\r\n"
        for field in head.headerFields { text += "\(field.name.rawName): \(field.value)\r\n" }
        return text + "\r\n" + bodyText
    }

    /// The response (Hummingbird sets its `Content-Length`).
    public var response: Response {
        var fields = head().headerFields
        fields[.contentLength] = nil
        return Response(status: status, headers: fields, body: .init(byteBuffer: body))
    }

    /// The response (`HTTPResponseError`).
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        response
    }
}
