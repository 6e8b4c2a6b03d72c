import BridgeTestKit
import Foundation
import Logging
import Synchronization

/// Keeps every message a logger sends it, so a test can wait for what the bridge says it did (a client's disconnect
/// being handled, a request expiring) instead of sleeping. Logs go on to stderr too when `TEST_LOG` is set.
final class LogRecorder: Sendable {
    private let messages = Mutex<[String]>([])
    private let changes = ChangeSignal()

    /// A logger that records here (every level).
    func logger(label: String) -> Logger {
        let echo = ProcessInfo.processInfo.environment["TEST_LOG"] != nil
        var logger = Logger(label: label) { label in
            var handlers: [any LogHandler] = [Handler(recorder: self)]
            if echo { handlers.append(StreamLogHandler.standardError(label: label)) }
            return MultiplexLogHandler(handlers)
        }
        logger.logLevel = .debug
        return logger
    }

    fileprivate func record(_ message: String) {
        messages.withLock { $0.append(message) }
        changes.notify()
    }

    /// How many recorded messages are exactly `message`.
    func count(of message: String) -> Int {
        messages.withLock { $0.filter { $0 == message }.count }
    }

    /// Waits until `message` was logged at least `times` times; false if that takes longer than `timeout`.
    func waitFor(_ message: String, times: Int = 1, timeout: Duration = .seconds(10)) async -> Bool {
        await changes.wait(timeout: timeout) { count(of: message) >= times }
    }

    private struct Handler: LogHandler {
        let recorder: LogRecorder
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        var metadataProvider: Logger.MetadataProvider?

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            recorder.record(event.message.description)
        }
    }
}
