import BridgePairing
import BridgeRPC
import HTTPTypes
import Hummingbird
import Testing
@testable import BridgeHTTP

/// A refused pairing or account request is written as every refusal is (issue 31 item 5): ``JSONErrorResponse``,
/// typed from the ``PairingError``, with Protocol.md's error body and header fields.
@Suite("Pairing refusals through JSONErrorResponse", .tags(.unit))
struct PairingRefusalTests {
    @Test("status, code, message, Retry-After and retry_after, WWW-Authenticate and the private headers, as Protocol.md says")
    func wireFormat() throws {
        let limited = JSONErrorResponse(refusing: .rateLimited(retryAfterSeconds: 7))
        #expect(limited.status == .tooManyRequests && limited.code == "rate_limited")
        #expect(limited.headers[.retryAfter] == "7")
        let body = try JSONValue(parsing: limited.bodyText)
        #expect(body["error"] == "rate_limited" && body["retry_after"] == 7)
        #expect(body["message"]?.stringValue == PairingError.rateLimited(retryAfterSeconds: 7).message)

        #expect(JSONErrorResponse(refusing: .approvalPending(deviceID: "d1")).status == .forbidden)
        #expect(JSONErrorResponse(refusing: .missingToken).headers[.wwwAuthenticate] == "Bearer")
        #expect(JSONErrorResponse(refusing: .expiredToken(.access)).headers[.wwwAuthenticate] == nil)
        #expect(try JSONValue(parsing: JSONErrorResponse(refusing: .missingToken).bodyText)["retry_after"] == nil)

        let response = PairingRoutes.failure(.rateLimited(retryAfterSeconds: 7))
        #expect(response.status == .tooManyRequests)
        for (name, value) in [
            ("Retry-After", "7"), ("Content-Type", "application/json"), ("Cache-Control", "no-store"),
            ("X-Content-Type-Options", "nosniff"), ("X-Frame-Options", "DENY"), ("Referrer-Policy", "no-referrer"),
        ] {
            #expect(HTTPField.Name(name).flatMap { response.headers[$0] } == value, "\(name) in \(response.headers)")
        }
    }
}
