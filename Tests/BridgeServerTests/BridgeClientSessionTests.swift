import BridgeClient
import BridgeServer
import BridgeTestKit
import Foundation
import Logging
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The client-session API `oa-bridge connect` and Examples/PhoneClient share, against a real bridge on loopback.
@Suite("Client session", .tags(.loopback))
struct BridgeClientSessionTests {
    @Test("connect races past a dead candidate, initializes once, and a prompt streams in order to its end")
    func connectAndPrompt() async throws {
        let reserved = try ReservedPort()
        defer { withExtendedLifetime(reserved) {} }
        let dead = reserved.port
        try await TestBridge.with { port, configuration in
            let candidates = [
                try BridgeEndpoint.manual("127.0.0.1:\(dead)"),
                try BridgeEndpoint.manual("127.0.0.1:\(port)"),
            ]
            let tokenAsked = Mutex(0)
            let session = try await BridgeClientSession.connect(
                to: candidates, options: BridgeSessionOptions(
                    clientName: "session-test", connectTimeout: TestBounds.notUnderTest, initializeTimeout: TestBounds.notUnderTest, pingInterval: nil),
                credential: {
                    tokenAsked.withLock { $0 += 1 }
                    return nil
                },
                logger: Logger(label: "test.session"))
            defer { session.close() }
            #expect(session.first.endpoint == candidates[1])
            #expect(session.first.attempts.count == 2)
            #expect(session.first.workingDirectory == configuration.workingDirectory)
            #expect(tokenAsked.withLock { $0 } == 1)

            let sessionID = try await session.newSession(cwd: try #require(session.first.workingDirectory))
            let received = Mutex<[(text: String, sequence: Int)]>([])
            let stopReason = try await session.prompt(sessionID: sessionID, text: "hello") { update, sequence in
                if case .messageChunk(let text) = update { received.withLock { $0.append((text, sequence)) } }
            } onPermission: { request in
                request.options.first { $0.kind.hasPrefix("allow") }?.id
            }
            #expect(stopReason == "end_turn")
            let chunks = received.withLock { $0 }
            #expect(!chunks.isEmpty)
            let sequences = chunks.map(\.sequence)
            #expect(sequences == sequences.sorted() && Set(sequences).count == sequences.count)
        }
    }

    @Test("with no candidate reachable, connect throws the race's typed error")
    func nothingReachable() async throws {
        let reserved = try ReservedPort()
        defer { withExtendedLifetime(reserved) {} }
        let dead = reserved.port
        await #expect(throws: BridgeClientError.self) {
            _ = try await BridgeClientSession.connect(
                to: [try BridgeEndpoint.manual("127.0.0.1:\(dead)")], options: BridgeSessionOptions(pingInterval: nil),
                credential: { nil }, logger: Logger(label: "test.session"))
        }
    }
}
