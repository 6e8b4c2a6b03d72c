import BridgeRPC
import BridgeServer
import BridgeTestKit
import Foundation
import HummingbirdWSClient
import Logging
import NIOWebSocket
import ServiceLifecycle
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Graceful shutdown through swift-service-lifecycle, and the connection cap.
@Suite("Graceful shutdown and the connection cap", .timeLimit(.minutes(1)), .tags(.loopback))
struct ShutdownTests {
    @Test("graceful shutdown: clients see 1001 'bridge shutting down'; a prompt in flight gets the grace period, then is cancelled")
    func gracefulShutdown() async throws {
        var configuration = BridgeServerConfiguration(serverName: "test-bridge", workingDirectory: try TestBridge.makeDirectory())
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.demoChunkDelay = .milliseconds(5)
        // The grace period runs on a clock the test moves: it passes only when the test says so, whatever the load.
        let clock = ManualClock()
        configuration.clock = clock
        configuration.shutdownGracePeriod = .seconds(3)
        // Each connection's initialize deadline sleeps on the clock too, until the clock passes it.
        configuration.initializeTimeout = .seconds(1)
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
                    // Both clients initialized: their initialize deadlines pass and leave the clock, so that only the
                    // sweeps sleep on it (and then the wait for the prompt).
                    clock.advance(by: .seconds(1))
                    let shutdownAt = ContinuousClock.now
                    let graceStart = clock.now
                    await group.triggerGracefulShutdown()
                    for client in [phone, watcher] {
                        let frame = try await client.waitForEnd(timeout: .seconds(5))
                        #expect(frame?.closeCode == .goingAway)
                        #expect(frame?.reason == "bridge shutting down")
                    }
                    #expect(ContinuousClock.now - shutdownAt < .seconds(2))
                    #expect(clock.now == graceStart, "clients are told before any of the grace period passed")
                    // The sweeps (stuck clients, orphaned requests) and the wait for the prompt sleep on the clock.
                    try #require(await clock.waitForSleepers(3))
                    clock.advance(by: .seconds(3) - .milliseconds(20))
                    try #require(await clock.waitForSleepers(3))
                    #expect(stoppedAt.instant == nil, "the prompt got its grace period")
                    // The grace period is over: the prompt is cancelled, and waited for one more second at most (the
                    // hub looks every 20 ms of the clock). Each time its look sleeps on the clock again (beside the
                    // two sweeps), the clock moves 20 ms on, until the bridge stopped: no more than that second.
                    clock.advance(by: .milliseconds(20))
                    var steps = 0
                    while await !stoppedAt.stopsOrSleeps(on: clock, sleepers: 3), steps < 50 {
                        clock.advance(by: .milliseconds(20))
                        steps += 1
                    }
                    #expect(await stoppedAt.waitForStop(timeout: .seconds(10)), "then it was cancelled, not waited for")
                }
            }
            // Nothing listens any more.
            let refused = try await onOwnThread { () throws -> Bool in
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
        let logs = TestLog()
        try await TestBridge.with(logs: logs, configure: { $0.maxConnections = 2 }, { port, _ in
            try await TestClient.with(port: port) { first in
                try await first.initialize(seed: false)
                try await TestClient.with(port: port) { second in
                    try await second.initialize(seed: true)
                    let reply = try await LoopbackHTTP.request(port: port, "GET", "/", headers: LoopbackHTTP.upgradeHeaders)
                    #expect(reply.status == 503)
                    #expect(reply.headers["content-type"] == "application/json")
                    #expect(reply.headers["retry-after"] == "5")
                    let body = try JSONValue(parsing: reply.text)
                    #expect(body["error"] == "too_many_connections")
                    #expect(body["limit"] == 2)
                    #expect(body["message"]?.stringValue?.contains("2 WebSocket connections") == true)
                }
                // The second one left: once the bridge has freed its slot (it logs that as the connection's task ends),
                // a new connection fits again, at the first attempt.
                try #require(await logs.waitFor("connection slot freed"))
                var admitted = false
                do {
                    try await TestClient.with(port: port) { third in
                        try await third.initialize(seed: false)
                    }
                    admitted = true
                } catch {
                    Issue.record("the third connection failed: \(error)")
                }
                #expect(admitted, "a freed slot is reused")
            }
        })
    }
}

extension ShutdownTests {
    /// The whole reply to a WebSocket upgrade request (blocking; see ``LoopbackHTTP``).
    static func upgradeReply(port: Int, path: String = "/") throws -> LoopbackHTTP.Reply {
        try LoopbackHTTP.blockingRequest(port: port, "GET", path, headers: LoopbackHTTP.upgradeHeaders, host: "127.0.0.1:\(port)")
    }
}

/// When the service group returned.
final class StopTime: Sendable {
    private let state = Mutex<ContinuousClock.Instant?>(nil)
    private let changes = ChangeSignal()
    var instant: ContinuousClock.Instant? { state.withLock { $0 } }

    func mark() {
        state.withLock { $0 = ContinuousClock.now }
        changes.notify()
    }

    /// Waits until it stopped; false if it did not within `timeout`.
    func waitForStop(timeout: Duration) async -> Bool {
        await changes.wait(timeout: timeout) { instant != nil }
    }

    /// Waits (10 s at most) until it stopped or `sleepers` tasks sleep on `clock`; true if it stopped.
    func stopsOrSleeps(on clock: ManualBridgeClock, sleepers: Int) async -> Bool {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { _ = await self.waitForStop(timeout: .seconds(10)) }
            group.addTask { _ = await clock.waitForSleepers(sleepers, timeout: .seconds(10)) }
            await group.next()
            group.cancelAll()
        }
        return instant != nil
    }
}
