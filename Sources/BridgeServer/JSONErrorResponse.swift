import Foundation
import HTTPTypes
import Hummingbird

/// An HTTP refusal with a JSON body `{"error": code, "message": …, …}`; thrown from the upgrade check or returned
/// by middleware.
struct JSONErrorResponse: HTTPResponseError {
    let status: HTTPResponse.Status
    /// Machine-readable code, e.g. `forbidden_network`.
    let code: String
    /// What happened and what to do.
    let message: String
    /// Extra members of the body.
    var extra: [String: Int] = [:]
    /// Extra header fields (e.g. `Retry-After`).
    var headers: HTTPFields = [:]

    /// The body's JSON text.
    var bodyText: String {
        var members: [String: Any] = ["error": code, "message": message]
        for (key, value) in extra { members[key] = value }
        let data = (try? JSONSerialization.data(withJSONObject: members, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// The response.
    var response: Response {
        var fields = headers
        fields[.contentType] = "application/json"
        fields[.cacheControl] = "no-store"
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(string: bodyText)))
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        response
    }
}
