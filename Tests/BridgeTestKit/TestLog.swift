import Foundation
public import Logging
import Synchronization

/// Keeps what a logger is told (message and metadata), so a test can check what was logged (the agent's lines, the
/// terminal host's, the bridge's) or wait for a line (a client's disconnect being handled, a request expiring) instead
/// of sleeping.
///
/// Lines go on to stderr too when `TEST_LOG` is set.
public final class TestLog: Sendable {
    /// One log call.
    public struct Entry: Sendable {
        /// The line's message.
        public let message: String
        /// The logger's and the line's metadata, as text.
        public let metadata: [String: String]
    }

    private let entries = Mutex<[Entry]>([])
    /// Told after every line (what ``waitFor(_:times:timeout:)`` waits on).
    private let changes = ChangeSignal()

    /// An empty log.
    public init() {}

    /// A logger that records here, from `level` up (every level unless told).
    public func logger(label: String = "test.agent", level: Logger.Level = .trace) -> Logger {
        let echo = ProcessInfo.processInfo.environment["TEST_LOG"] != nil
        var logger = Logger(label: label) { label in
            guard echo else { return Handler(log: self) }
            return MultiplexLogHandler([Handler(log: self), StreamLogHandler.standardError(label: label)])
        }
        logger.logLevel = level
        return logger
    }

    /// What was logged with this message.
    public func entries(_ message: String) -> [Entry] {
        entries.withLock { $0.filter { $0.message == message } }
    }

    /// Everything logged, in order.
    public var all: [Entry] { entries.withLock { $0 } }

    /// How many lines had exactly this message.
    public func count(of message: String) -> Int {
        entries.withLock { $0.count { $0.message == message } }
    }

    /// Waits until `message` was logged at least `times` times; false if that takes longer than `timeout` of real time.
    public func waitFor(_ message: String, times: Int = 1, timeout: Duration = TestBounds.notUnderTest) async -> Bool {
        await changes.wait(timeout: timeout) { count(of: message) >= times }
    }

    fileprivate func record(_ entry: Entry) {
        entries.withLock { $0.append(entry) }
        changes.notify()
    }

    /// A handler that records here, for a test that puts it under another handler (one that escapes, say): the
    /// handler's metadata, then its metadata provider's, then the line's, later ones winning.
    public func handler() -> some LogHandler { Handler(log: self) }

    private struct Handler: LogHandler {
        let log: TestLog
        var metadata: Logger.Metadata = [:]
        var metadataProvider: Logger.MetadataProvider?
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            var all = metadata
            all.merge(metadataProvider?.get() ?? [:]) { _, new in new }
            all.merge(event.metadata ?? [:]) { _, new in new }
            log.record(Entry(message: event.message.description, metadata: all.mapValues { "\($0)" }))
        }
    }
}
