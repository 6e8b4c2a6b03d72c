import BridgeRPC
import BridgeTestKit
import Foundation
import HummingbirdWSClient
import Logging
import NIOCore
import NIOWebSocket
import Synchronization

/// A real WebSocket client for tests: frames it receives are buffered; `next` waits (bounded) for one.
final class TestClient: Sendable {
    enum Command: Sendable {
        case text(String)
        case binary([UInt8])
        case close
    }

    private let inbox = Mutex<[String]>([])
    private let ended = Mutex(false)
    private let closeFrame = Mutex<WebSocketCloseFrame?>(nil)
    private let commands: AsyncStream<Command>.Continuation
    /// Told of every frame and of the end: the waits below wait for those, not for time.
    private let changes = ChangeSignal()

    init(commands: AsyncStream<Command>.Continuation) {
        self.commands = commands
    }

    func push(_ text: String) {
        inbox.withLock { $0.append(text) }
        changes.notify()
    }
    func finish(_ frame: WebSocketCloseFrame?) {
        closeFrame.withLock { $0 = frame }
        ended.withLock { $0 = true }
        changes.notify()
    }

    /// Sends a text frame.
    func send(_ text: String) { commands.yield(.text(text)) }
    /// Sends a JSON value as a text frame.
    func send(_ value: JSONValue) { commands.yield(.text(value.jsonText)) }
    /// Sends a binary frame.
    func sendBinary(_ bytes: [UInt8]) { commands.yield(.binary(bytes)) }
    /// Starts a normal close.
    func close() { commands.yield(.close) }

    /// The next text frame, within `timeout`.
    func nextText(timeout: Duration = TestBounds.notUnderTest) async throws -> String {
        var text: String?
        var closed = false
        _ = await changes.wait(timeout: timeout) {
            text = inbox.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            closed = text == nil && ended.withLock { $0 } && inbox.withLock { $0.isEmpty }
            return text != nil || closed
        }
        if let text { return text }
        throw closed ? TestClientError.closed : TestClientError.timeout
    }

    /// The next frame, parsed.
    func next(timeout: Duration = TestBounds.notUnderTest) async throws -> JSONValue {
        try JSONValue(parsing: try await nextText(timeout: timeout))
    }

    /// Frames until one satisfies `match` (within `timeout` overall); returns it and the ones skipped.
    func next(timeout: Duration = TestBounds.notUnderTest, where match: (JSONValue) -> Bool) async throws -> (JSONValue, [JSONValue]) {
        var skipped: [JSONValue] = []
        let deadline = ContinuousClock.now + timeout
        while true {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { throw TestClientError.timeout }
            let value = try await next(timeout: remaining)
            if match(value) { return (value, skipped) }
            skipped.append(value)
        }
    }

    /// Whether anything arrives within `duration`.
    func receivesNothing(for duration: Duration) async throws -> Bool {
        await !changes.wait(timeout: duration) { !inbox.withLock { $0.isEmpty } }
    }

    /// Waits (bounded) for the connection to end; returns the close frame.
    func waitForEnd(timeout: Duration = TestBounds.notUnderTest) async throws -> WebSocketCloseFrame? {
        guard await changes.wait(timeout: timeout, for: { ended.withLock { $0 } }) else { throw TestClientError.timeout }
        return closeFrame.withLock { $0 }
    }

    /// Connects to `ws://127.0.0.1:port/path`, runs `body`, then closes.
    static func with<T: Sendable>(port: Int, path: String = "/", _ body: @Sendable (TestClient) async throws -> T) async throws -> T {
        let (stream, sink) = AsyncStream.makeStream(of: Command.self)
        let client = TestClient(commands: sink)
        let configuration = WebSocketClientConfiguration(maxFrameSize: 1 << 24)
        let logger = Logger(label: "test.client")
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    let frame = try await WebSocketClient.connect(url: "ws://127.0.0.1:\(port)\(path)", configuration: configuration, logger: logger) { inbound, outbound, _ in
                        try await withThrowingTaskGroup(of: Void.self) { inner in
                            inner.addTask {
                                for await command in stream {
                                    switch command {
                                    case .text(let text): try await outbound.write(.text(text))
                                    case .binary(let bytes): try await outbound.write(.binary(ByteBuffer(bytes: bytes)))
                                    case .close:
                                        try await outbound.close(.normalClosure, reason: "test done")
                                        return
                                    }
                                }
                            }
                            inner.addTask {
                                for try await message in inbound.messages(maxSize: 1 << 24) {
                                    if case .text(let text) = message { client.push(text) }
                                }
                            }
                            _ = try await inner.next()
                            inner.cancelAll()
                        }
                    }
                    client.finish(frame)
                } catch {
                    client.finish(nil)
                    throw error
                }
            }
            do {
                let result = try await body(client)
                sink.yield(.close)
                sink.finish()
                try await group.waitForAll()
                return result
            } catch {
                sink.yield(.close)
                sink.finish()
                group.cancelAll()
                throw error
            }
        }
    }
}

enum TestClientError: Error {
    case timeout
    case closed
}
