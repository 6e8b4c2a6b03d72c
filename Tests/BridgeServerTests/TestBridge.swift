import BridgeServer
import BridgeTestKit
import Foundation
import Logging
import Synchronization
import Testing

/// Runs a real bridge on 127.0.0.1, port 0, for the duration of `body`.
enum TestBridge {
    static func makeDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "oa-bridge-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// With `logs`, the bridge logs (every level) into it.
    static func with<T: Sendable>(
        logs: TestLog? = nil,
        configure: (inout BridgeServerConfiguration) -> Void = { _ in },
        _ body: @Sendable (_ port: Int, _ configuration: BridgeServerConfiguration) async throws -> T
    ) async throws -> T {
        var configuration = BridgeServerConfiguration(serverName: "test-bridge", workingDirectory: try makeDirectory())
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.demoChunkDelay = .milliseconds(1)
        // Not under test here: the product's 10 s deadlines for a connection's initialize and a request's head.
        // The full parallel run on a loaded 2-core machine can hold a test's client back for longer than that; the
        // tests of these deadlines set them (on an injected clock).
        configuration.initializeTimeout = Self.boundNotUnderTest
        configuration.requestHeadTimeout = Self.boundNotUnderTest
        configure(&configuration)
        var logger = Logger(label: "test.bridge")
        logger.logLevel = ProcessInfo.processInfo.environment["TEST_LOG"] == nil ? .critical : .debug
        if let logs { logger = logs.logger(label: "test.bridge", level: .debug) }
        let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
        let server = BridgeServer(configuration: configuration, logger: logger) { port in portSink.yield(port) }
        let frozen = configuration
        // The bridge runs in a task of its own that the test waits for, bounded: a bridge that does not stop within
        // `stopLimit` of the test's end fails the test (naming it) instead of hanging the whole run.
        let running = Task {
            defer { portSink.finish() }
            try await server.run()
        }
        let result: Result<T, any Error>
        var iterator = ports.makeAsyncIterator()
        if let port = await iterator.next() {
            do {
                result = .success(try await body(port, frozen))
            } catch {
                result = .failure(error)
            }
        } else {
            result = .failure(TestClientError.closed)
        }
        running.cancel()
        guard await finishes(running, within: stopLimit) else {
            Issue.record("the bridge did not stop within \(stopLimit) of the test's end (left running)")
            throw TestBridgeError.didNotStop
        }
        return try result.get()
    }

    /// The bridge's deadlines in tests that are not about them (see ``with(logs:configure:_:)``).
    static let boundNotUnderTest: Duration = .seconds(60)

    /// How long a bridge may take to stop once its test is done (its shutdown is cut short by the cancellation).
    static let stopLimit: Duration = .seconds(30)

    /// Whether `task` ends within `limit` (its error, if any, is not looked at: the test is over).
    private static func finishes(_ task: Task<Void, any Error>, within limit: Duration) async -> Bool {
        let ended = Mutex(false)
        let changes = ChangeSignal()
        let waiter = Task {
            _ = await task.result
            ended.withLock { $0 = true }
            changes.notify()
        }
        defer { waiter.cancel() }
        return await changes.wait(timeout: limit) { ended.withLock { $0 } }
    }
}

/// A test bridge's own failure.
enum TestBridgeError: Error {
    /// The bridge was still running ``TestBridge/stopLimit`` after its test ended.
    case didNotStop
}
