import Foundation
import Logging

/// Configures swift-log once for the process: text or JSON lines on stderr.
enum LoggingSetup {
    /// The log line format.
    enum Format: String, Sendable {
        case text
        case json
    }

    static func bootstrap(level: Logger.Level, format: Format) {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
}
