public import Foundation
public import Logging
import Synchronization

/// Keeps what a logger is told (message and metadata), so a test can check what was logged (the agent's lines, the
/// terminal host's).
public final class TestLog: Sendable {
    /// One log call.
    public struct Entry: Sendable {
        /// The line's message.
        public let message: String
        /// The logger's and the line's metadata, as text.
        public let metadata: [String: String]
    }

    private let entries = Mutex<[Entry]>([])

    /// An empty log.
    public init() {}

    /// A logger that records here, at every level.
    public func logger(label: String = "test.agent") -> Logger {
        var logger = Logger(label: label) { _ in Handler(log: self) }
        logger.logLevel = .trace
        return logger
    }

    /// What was logged with this message.
    public func entries(_ message: String) -> [Entry] {
        entries.withLock { $0.filter { $0.message == message } }
    }

    /// Everything logged, in order.
    public var all: [Entry] { entries.withLock { $0 } }

    fileprivate func record(_ entry: Entry) { entries.withLock { $0.append(entry) } }

    private struct Handler: LogHandler {
        let log: TestLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            var all = metadata
            all.merge(event.metadata ?? [:]) { _, new in new }
            log.record(Entry(message: event.message.description, metadata: all.mapValues { "\($0)" }))
        }
    }
}
