import BridgeClient
import BridgeServer
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
    /// A loopback port nothing listens on (bound, then closed).
    private static func closedPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        try #require(bound)
        return Int(UInt16(bigEndian: address.sin_port))
    }

    @Test("connect races past a dead candidate, initializes once, and a prompt streams in order to its end")
    func connectAndPrompt() async throws {
        let dead = try Self.closedPort()
        try await TestBridge.with { port, configuration in
            let candidates = [
                try BridgeEndpoint.manual("127.0.0.1:\(dead)"),
                try BridgeEndpoint.manual("127.0.0.1:\(port)"),
            ]
            let tokenAsked = Mutex(0)
            let session = try await BridgeClientSession.connect(
                to: candidates, options: BridgeSessionOptions(clientName: "session-test", pingInterval: nil),
                token: {
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
        let dead = try Self.closedPort()
        await #expect(throws: BridgeClientError.self) {
            _ = try await BridgeClientSession.connect(
                to: [try BridgeEndpoint.manual("127.0.0.1:\(dead)")], options: BridgeSessionOptions(pingInterval: nil),
                token: { nil }, logger: Logger(label: "test.session"))
        }
    }
}
