import BridgeTestKit
import HummingbirdWSClient
import NIOWebSocket
import Testing
@testable import BridgeServer

/// What code that cannot await hands the hub (``HubErrand``) is run by the hub's run group, not by a task of its own
/// (issue 31 leftover): a Streamable HTTP connection's end, and the system clock's initialize deadline.
@Suite("Errands the hub's run group owns", .timeLimit(.minutes(1)), .tags(.loopback))
struct HubErrandTests {
    static let initialize =
        #"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{},"clientInfo":{"name":"test","version":"1"}}}"#

    @Test("a Streamable HTTP connection ended with DELETE /acp is forgotten by the hub (its end is an errand)")
    func streamableEnd() async throws {
        let logs = TestLog()
        try await TestBridge.with(logs: logs) { port, _ in
            // The answer waits for the agent's to initialize: up to 30 s (the full parallel run's first seconds held it up
            // for more than the helper's usual 5).
            let answer = try await LoopbackHTTP.request(
                port: port, "POST", "/acp", json: Self.initialize, headers: ["Accept": "application/json, text/event-stream"],
                receiveTimeout: 30)
            #expect(answer.status == 200, "\(answer.status) \(answer.text)")
            let connection = try #require(answer.headers["acp-connection-id"], "\(answer.headers)")
            #expect(await logs.waitFor("client connected"))
            let deleted = try await LoopbackHTTP.request(
                port: port, "DELETE", "/acp", headers: ["Acp-Connection-Id": connection], receiveTimeout: 30)
            #expect((200..<300).contains(deleted.status), "\(deleted.status) \(deleted.text)")
            #expect(await logs.waitFor("client disconnected"), "the hub did not forget the ended connection")
        }
    }

    /// The system clock's deadline is a timer on the connection's event loop (a test clock takes the other path): a
    /// short one, and a bound of 30 s for the close it brings (a full parallel run holds its first tests up for 8-15 s).
    @Test("on the system clock, a connection that does not initialize is closed at its deadline (the timer's look is an errand)")
    func initializeDeadlineOnTheSystemClock() async throws {
        try await TestBridge.with(configure: { $0.initializeTimeout = .milliseconds(200) }, { port, _ in
            try await TestClient.with(port: port) { idle in
                let frame = try await idle.waitForEnd(timeout: .seconds(30))
                #expect(frame?.closeCode == .policyViolation)
                #expect(frame?.reason == "initialize not completed within 0.2 s")
            }
        })
    }
}
