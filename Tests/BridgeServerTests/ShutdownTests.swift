import BridgeRPC
import BridgeServer
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Graceful shutdown through swift-service-lifecycle, and the connection cap.
@Suite("Graceful shutdown and the connection cap", .timeLimit(.minutes(1)))
struct ShutdownTests {
    @Test("graceful shutdown: clients see 1001 'bridge shutting down'; a prompt in flight gets the grace period, then is cancelled")
    func gracefulShutdown() async throws {
        var configuration = BridgeServerConfiguration(serverName: "test-bridge", workingDirectory: try TestBridge.makeDirectory())
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.demoChunkDelay = .milliseconds(5)
        // Long enough that "clients are told at once" (within 2 s) is unmistakably before the grace period ends, on a
        // loaded 2-core CI machine too.
        configuration.shutdownGracePeriod = .seconds(3)
        var logger = Logger(label: "test.shutdown")
        logger.logLevel = ProcessInfo.processInfo.environment["TEST_LOG"] == nil ? .critical : .debug
        let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
        let server = BridgeServer(configuration: configuration, logger: logger) { port in portSink.yield(port) }
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: [server], logger: logger))
        let stoppedAt = StopTime()
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask {
                try await group.run()
                stoppedAt.mark()
            }
            var iterator = ports.makeAsyncIterator()
            let port = try #require(await iterator.next())
            try await TestClient.with(port: port) { watcher in
                try await TestClient.with(port: port) { phone in
                    try await watcher.initialize(seed: true)
                    try await phone.initialize(seed: false)
                    let session = try await phone.newSession(seed: false)
                    // The demo prompt ends up waiting for a permission nobody will give: it runs until cancelled.
                    phone.prompt(seed: false, session: session, text: "a prompt in flight")
                    _ = try await phone.next { $0["method"] == "session/request_permission" }
                    let shutdownAt = ContinuousClock.now
                    await group.triggerGracefulShutdown()
                    for client in [phone, watcher] {
                        let frame = try await client.waitForEnd(timeout: .seconds(5))
                        #expect(frame?.closeCode == .goingAway)
                        #expect(frame?.reason == "bridge shutting down")
                    }
                    #expect(ContinuousClock.now - shutdownAt < .seconds(2))
                    let deadline = ContinuousClock.now + .seconds(10)
                    while stoppedAt.instant == nil, ContinuousClock.now < deadline {
                        try await Task.sleep(for: .milliseconds(10))
                    }
                    let stopped = try #require(stoppedAt.instant, "the server did not stop")
                    #expect(stopped - shutdownAt >= .seconds(3), "the prompt got its grace period")
                    #expect(stopped - shutdownAt < .seconds(8), "then it was cancelled, not waited for")
                }
            }
            // Nothing listens any more.
            let refused = try await offPool { () throws -> Bool in
                do {
                    _ = try RawWebSocket(port: port)
                    return false
                } catch {
                    return true
                }
            }
            #expect(refused)
            try await tasks.waitForAll()
        }
    }

    @Test("beyond maxConnections the upgrade is refused with 503 and a JSON body naming the limit; a freed slot is reused")
    func connectionCap() async throws {
        try await TestBridge.with(configure: { $0.maxConnections = 2 }) { port, _ in
            try await TestClient.with(port: port) { first in
                try await first.initialize(seed: false)
                try await TestClient.with(port: port) { second in
                    try await second.initialize(seed: true)
                    let reply = try await offPool { try ShutdownTests.upgradeReply(port: port) }
                    #expect(reply.status == 503)
                    #expect(reply.headers["content-type"] == "application/json")
                    #expect(reply.headers["retry-after"] == "5")
                    let body = try JSONValue(parsing: reply.text)
                    #expect(body["error"] == "too_many_connections")
                    #expect(body["limit"] == 2)
                    #expect(body["message"]?.stringValue?.contains("2 WebSocket connections") == true)
                }
                // The second one left: a new connection fits again.
                try await Task.sleep(for: .milliseconds(200))
                try await TestClient.with(port: port) { third in
                    try await third.initialize(seed: false)
                }
            }
        }
    }
}

extension ShutdownTests {
    /// Sends a WebSocket upgrade request on a plain socket and reads the whole HTTP answer (the server closes).
    static func upgradeReply(port: Int, path: String = "/") throws -> PairingHTTP.Reply {
        let fd = try LoopbackSocket.connect(port: port)
        defer { close(fd) }
        let request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        let bytes = Array(request.utf8)
        guard bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else {
            throw PairingHTTP.Failure(message: "send failed")
        }
        var data = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        // Read until the body is complete (Content-Length) or the server closes; bounded.
        for _ in 0..<1000 {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { break }
            data.append(contentsOf: buffer[0..<count])
            let text = String(decoding: data, as: UTF8.self)
            if let split = text.range(of: "\r\n\r\n"),
               let lengthLine = text[..<split.lowerBound].split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("content-length:") }),
               let length = Int(lengthLine.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)),
               text.utf8.distance(from: split.upperBound.samePosition(in: text.utf8) ?? text.utf8.endIndex, to: text.utf8.endIndex) >= length {
                break
            }
        }
        let text = String(decoding: data, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { throw PairingHTTP.Failure(message: "no HTTP response: \(text)") }
        let lines = text[..<split.lowerBound].components(separatedBy: "\r\n")
        let status = Int(lines.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return PairingHTTP.Reply(status: status, headers: headers, body: Array(text[split.upperBound...].utf8))
    }
}

/// When the service group returned.
final class StopTime: Sendable {
    private let state = Mutex<ContinuousClock.Instant?>(nil)
    var instant: ContinuousClock.Instant? { state.withLock { $0 } }
    func mark() { state.withLock { $0 = ContinuousClock.now } }
}
