import BridgeHTTP
import BridgePairing
import BridgeServer
import BridgeTestKit
import Foundation
import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import Testing

/// A refused WebSocket upgrade travels as a typed value (``JSONErrorResponse``: status, code, message, header
/// fields) from the check to the one place that writes the answer (issue 31 item 5): nothing is written as
/// `"code: message"` text and parsed back.
@Suite("Upgrade refusals as typed values", .tags(.loopback))
struct UpgradeRefusalTests {
    /// The head fields of a WebSocket upgrade, without `Authorization`.
    static let upgrade = [
        "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version": "13",
    ]

    static func body(_ reply: LoopbackHTTP.Reply) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(reply.body))) as? [String: Any] ?? [:]
    }

    @Test("a rate-limited upgrade gets 429 with Retry-After and retry_after, as a rate-limited HTTP request does")
    func rateLimitedUpgrade() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("oa-bridge-refusal-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var logger = Logger(label: "test.upgrade-refusal")
        logger.logLevel = .critical
        let authenticator = Authenticator(store: try TokenStore(directory: directory, logger: logger))
        try await TestBridge.with(configure: { $0.authorizeUpgrade = authenticator.upgradeAuthorizer() }, { port, _ in
            func guess() async throws -> LoopbackHTTP.Reply {
                var headers = Self.upgrade
                headers["Authorization"] = "Bearer \(TokenSecret.generate(.access))"
                return try await LoopbackHTTP.request(port: port, "GET", "/", headers: headers)
            }
            for _ in 0..<10 {
                let refused = try await guess()
                #expect(refused.status == 401 && Self.body(refused)["error"] as? String == PairingError.invalidToken(.access).code)
            }
            let limited = try await guess()
            #expect(limited.status == 429)
            let seconds = try #require(Int(limited.headers["retry-after"] ?? ""), "no Retry-After in \(limited.headers)")
            #expect(seconds > 0)
            let body = Self.body(limited)
            #expect(body["error"] as? String == "rate_limited" && body["retry_after"] as? Int == seconds)
        })
    }

    @Test("an authorizer's refusal reaches the client as given: its code, its message (colons and all), its headers")
    func customRefusal() async throws {
        try await TestBridge.with(configure: { configuration in
            configuration.authorizeUpgrade = { request in
                if request.path.contains("maintenance") {
                    return .deny(JSONErrorResponse(
                        status: .serviceUnavailable, code: "maintenance", message: "Back soon: the desk is updating.",
                        headers: [.retryAfter: "30"]))
                }
                return .deny(status: .forbidden, code: "closed", message: "Closed: come back at 2 pm")
            }
        }, { port, _ in
            let closed = try await LoopbackHTTP.request(port: port, "GET", "/", headers: Self.upgrade)
            #expect(closed.status == 403 && closed.headers["connection"]?.lowercased() == "close")
            #expect(Self.body(closed)["error"] as? String == "closed")
            #expect(Self.body(closed)["message"] as? String == "Closed: come back at 2 pm")
            let maintenance = try await LoopbackHTTP.request(port: port, "GET", "/?maintenance", headers: Self.upgrade)
            #expect(maintenance.status == 503 && maintenance.headers["retry-after"] == "30")
            #expect(Self.body(maintenance)["error"] as? String == "maintenance")
            #expect(Self.body(maintenance)["message"] as? String == "Back soon: the desk is updating.")
        })
    }

    @Test("every writer sends one head: the refusal's fields, JSON type, no-store, its length, and close when asked")
    func oneHead() {
        let refusal = JSONErrorResponse(
            status: .tooManyRequests, code: "rate_limited", message: "wait", extra: ["retry_after": 5], headers: [.retryAfter: "5"])
        let head = refusal.head(closing: true)
        #expect(head.status == .tooManyRequests && head.headerFields[.retryAfter] == "5")
        #expect(head.headerFields[.contentType] == "application/json" && head.headerFields[.cacheControl] == "no-store")
        #expect(head.headerFields[.contentLength] == "\(refusal.body.readableBytes)" && head.headerFields[.connection] == "close")
        #expect(refusal.head().headerFields[.connection] == nil)
        let text = refusal.closingHTTP1Text
        #expect(text.hasPrefix("HTTP/1.1 429 Too Many Requests\r\n") && text.hasSuffix("\r\n\r\n" + refusal.bodyText))
        #expect(text.contains("Retry-After: 5\r\n") && text.contains("Connection: close\r\n"))
        #expect(refusal.response.headers[.contentType] == "application/json" && refusal.response.status == .tooManyRequests)
    }

    @Test("a refused upgrade and a refused connection carry the bridge's Date (RFC 9110 §6.6.1), by the bridge's clock")
    func dated() async throws {
        // 2031-01-01 00:00:07 UTC: far from the real time, so only the bridge's clock can have written it.
        let clock = ManualBridgeClock(wallStart: Date(timeIntervalSince1970: 1_924_992_007))
        try await TestBridge.with(configure: { configuration in
            configuration.clock = clock
            configuration.authorizeUpgrade = { _ in .deny(status: .unauthorized, code: "token_expired", message: "Pair again.") }
        }, { port, _ in
            let refused = try await LoopbackHTTP.request(port: port, "GET", "/", headers: Self.upgrade)
            #expect(refused.status == 401)
            #expect(refused.headers["date"] == "Wed, 01 Jan 2031 00:00:07 GMT", "\(refused.headers)")
        })
        let text = JSONErrorResponse(status: .serviceUnavailable, code: "busy", message: "later")
            .closingHTTP1Text(date: Date(timeIntervalSince1970: 784_111_777))
        #expect(text.contains("\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n"))
        #expect(!JSONErrorResponse(status: .serviceUnavailable, code: "busy", message: "later").closingHTTP1Text.contains("Date:"))
    }
}
