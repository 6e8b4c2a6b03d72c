import BridgeServer
import Foundation
import Logging
import Synchronization

/// Runs a real bridge on 127.0.0.1, port 0, for the duration of `body`.
enum TestBridge {
    static func makeDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "oa-bridge-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// With `logs`, the bridge logs (every level) into it.
    static func with<T: Sendable>(
        logs: LogRecorder? = nil,
        configure: (inout BridgeServerConfiguration) -> Void = { _ in },
        _ body: @Sendable (_ port: Int, _ configuration: BridgeServerConfiguration) async throws -> T
    ) async throws -> T {
        var configuration = BridgeServerConfiguration(serverName: "test-bridge", workingDirectory: try makeDirectory())
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.demoChunkDelay = .milliseconds(1)
        configure(&configuration)
        var logger = Logger(label: "test.bridge")
        logger.logLevel = ProcessInfo.processInfo.environment["TEST_LOG"] == nil ? .critical : .debug
        if let logs { logger = logs.logger(label: "test.bridge") }
        let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
        let server = BridgeServer(configuration: configuration, logger: logger) { port in portSink.yield(port) }
        let frozen = configuration
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else { throw TestClientError.closed }
            defer { group.cancelAll() }
            return try await body(port, frozen)
        }
    }
}
