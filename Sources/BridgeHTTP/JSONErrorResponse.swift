import Foundation
import HTTPTypes
import Hummingbird

/// An HTTP refusal with a JSON body `{"error": code, "message": …, …}`; thrown from the upgrade check or returned
/// by middleware.
package struct JSONErrorResponse: HTTPResponseError {
    /// The HTTP status.
    package let status: HTTPResponse.Status
    /// Machine-readable code, e.g. `forbidden_network`.
    package let code: String
    /// What happened and what to do.
    package let message: String
    /// Extra members of the body.
    package var extra: [String: Int] = [:]
    /// Extra header fields (e.g. `Retry-After`).
    package var headers: HTTPFields = [:]

    /// A refusal with `status`, `code` and `message`, and `extra` members and `headers` when given.
    package init(
        status: HTTPResponse.Status, code: String, message: String, extra: [String: Int] = [:], headers: HTTPFields = [:]
    ) {
        self.status = status
        self.code = code
        self.message = message
        self.extra = extra
        self.headers = headers
    }

    /// The body's JSON text.
    package var bodyText: String {
        var members: [String: Any] = ["error": code, "message": message]
        for (key, value) in extra { members[key] = value }
        let data = (try? JSONSerialization.data(withJSONObject: members, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// The response.
    package var response: Response {
        var fields = headers
        fields[.contentType] = "application/json"
        fields[.cacheControl] = "no-store"
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(string: bodyText)))
    }

    package func response(from request: Request, context: some RequestContext) throws -> Response {
        response
    }
}
